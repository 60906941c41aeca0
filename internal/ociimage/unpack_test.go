package ociimage_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// The documents of the OCI image spec and the docker archive, as a reader decodes them:
// declared here, apart from the writer's, so the tests read the archive as a stranger would.
type (
	descriptor struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int64             `json:"size"`
		Annotations map[string]string `json:"annotations"`
		Platform    *struct {
			Architecture string `json:"architecture"`
			OS           string `json:"os"`
		} `json:"platform"`
	}
	index struct {
		SchemaVersion int          `json:"schemaVersion"`
		Manifests     []descriptor `json:"manifests"`
	}
	manifest struct {
		SchemaVersion int               `json:"schemaVersion"`
		MediaType     string            `json:"mediaType"`
		Config        descriptor        `json:"config"`
		Layers        []descriptor      `json:"layers"`
		Annotations   map[string]string `json:"annotations"`
	}
	config struct {
		Created      string `json:"created"`
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
		Config       struct {
			User       string            `json:"User"`
			Env        []string          `json:"Env"`
			Entrypoint []string          `json:"Entrypoint"`
			Cmd        []string          `json:"Cmd"`
			WorkingDir string            `json:"WorkingDir"`
			Labels     map[string]string `json:"Labels"`
		} `json:"config"`
		RootFS struct {
			Type    string   `json:"type"`
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	dockerEntry struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
)

// unpacked is an archive as a container runtime takes it in.
type unpacked struct {
	index    index
	manifest manifest
	config   config
	docker   []dockerEntry // manifest.json
	archive  []*tar.Header // the outer archive's entries, in order
	layers   []*tar.Header // every layer's entries, in order
}

// unpack reads an image archive the way a runtime does: index.json to the manifest, the
// manifest to the config and the layers, every blob checked against its digest and size and
// every layer against its diff ID, then the layers applied in order onto rootfs. It also
// reads manifest.json, the docker view of the same archive, and checks that it names the
// same config and layers.
func unpack(t testing.TB, archive []byte, rootfs string) unpacked {
	t.Helper()
	var u unpacked
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read the archive: %v", err)
		}
		u.archive = append(u.archive, hdr)
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("read %s: %v", hdr.Name, err)
		}
		if _, dup := files[hdr.Name]; dup {
			t.Fatalf("%s twice in the archive", hdr.Name)
		}
		files[hdr.Name] = data
	}
	if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Fatalf("oci-layout is %q", got)
	}
	blob := func(d descriptor) []byte {
		t.Helper()
		hexDigest, ok := strings.CutPrefix(d.Digest, "sha256:")
		if !ok {
			t.Fatalf("digest %q is not sha256", d.Digest)
		}
		data, ok := files["blobs/sha256/"+hexDigest]
		if !ok {
			t.Fatalf("no blob %s", d.Digest)
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != hexDigest || int64(len(data)) != d.Size {
			t.Fatalf("blob %s: %d bytes of digest %x, the descriptor says %d", d.Digest, len(data), sum, d.Size)
		}
		return data
	}
	decode := func(what string, data []byte, v any) {
		t.Helper()
		dec := json.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(v); err != nil {
			t.Fatalf("decode %s: %v", what, err)
		}
	}

	decode("index.json", files["index.json"], &u.index)
	if u.index.SchemaVersion != 2 || len(u.index.Manifests) != 1 {
		t.Fatalf("index.json: schema %d with %d manifests, want 2 with one", u.index.SchemaVersion, len(u.index.Manifests))
	}
	md := u.index.Manifests[0]
	if md.MediaType != "application/vnd.oci.image.manifest.v1+json" {
		t.Fatalf("index.json names a %s", md.MediaType)
	}
	decode("the manifest", blob(md), &u.manifest)
	if u.manifest.SchemaVersion != 2 || u.manifest.MediaType != md.MediaType || u.manifest.Config.MediaType != "application/vnd.oci.image.config.v1+json" {
		t.Fatalf("manifest: schema %d, %s, config %s", u.manifest.SchemaVersion, u.manifest.MediaType, u.manifest.Config.MediaType)
	}
	decode("the config", blob(u.manifest.Config), &u.config)
	if u.config.RootFS.Type != "layers" || len(u.config.RootFS.DiffIDs) != len(u.manifest.Layers) {
		t.Fatalf("config: rootfs %s with %d diff IDs for %d layers", u.config.RootFS.Type, len(u.config.RootFS.DiffIDs), len(u.manifest.Layers))
	}
	for i, l := range u.manifest.Layers {
		if l.MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
			t.Fatalf("layer %d is a %s", i, l.MediaType)
		}
		zr, err := gzip.NewReader(bytes.NewReader(blob(l)))
		if err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
		if sum := sha256.Sum256(raw); "sha256:"+hex.EncodeToString(sum[:]) != u.config.RootFS.DiffIDs[i] {
			t.Fatalf("layer %d: its tar's digest is not diff ID %s", i, u.config.RootFS.DiffIDs[i])
		}
		u.layers = append(u.layers, applyLayer(t, raw, rootfs)...)
	}

	decode("manifest.json", files["manifest.json"], &u.docker)
	if len(u.docker) != 1 {
		t.Fatalf("manifest.json holds %d images, want 1", len(u.docker))
	}
	d := u.docker[0]
	blobPath := func(digest string) string { return "blobs/sha256/" + strings.TrimPrefix(digest, "sha256:") }
	if d.Config != blobPath(u.manifest.Config.Digest) || len(d.Layers) != len(u.manifest.Layers) {
		t.Fatalf("manifest.json names config %s and %d layers; the OCI manifest %s and %d", d.Config, len(d.Layers), u.manifest.Config.Digest, len(u.manifest.Layers))
	}
	for i, l := range u.manifest.Layers {
		if d.Layers[i] != blobPath(l.Digest) {
			t.Fatalf("manifest.json layer %d is %s, the OCI manifest's %s", i, d.Layers[i], l.Digest)
		}
	}
	return u
}

// applyLayer extracts one layer's tar onto rootfs, as a runtime's snapshotter would. The
// images here have one layer, so a whiteout (a deletion from a lower layer) is an error.
func applyLayer(t testing.TB, layer []byte, rootfs string) []*tar.Header {
	t.Helper()
	var headers []*tar.Header
	// Directories get their modes last, so one without owner write (0555) still gets its
	// files.
	dirModes := map[string]fs.FileMode{}
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			for dir, mode := range dirModes {
				if err := os.Chmod(dir, mode); err != nil {
					t.Fatal(err)
				}
			}
			return headers
		}
		if err != nil {
			t.Fatalf("read the layer: %v", err)
		}
		headers = append(headers, hdr)
		name := path.Clean(hdr.Name)
		if path.IsAbs(hdr.Name) || name == ".." || strings.HasPrefix(name, "../") {
			t.Fatalf("layer entry %q leaves the root", hdr.Name)
		}
		if strings.HasPrefix(path.Base(name), ".wh.") {
			t.Fatalf("layer entry %q is a whiteout", hdr.Name)
		}
		target := filepath.Join(rootfs, filepath.FromSlash(name))
		mode := hdr.FileInfo().Mode() & (fs.ModePerm | fs.ModeSticky | fs.ModeSetuid | fs.ModeSetgid)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			dirModes[target] = mode
			continue
		case tar.TypeReg:
			f, err := os.OpenFile(target, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(target, mode); err != nil {
				t.Fatal(err)
			}
		case tar.TypeSymlink:
			if err := os.Symlink(hdr.Linkname, target); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("layer entry %s has type %q, which these tests do not apply", hdr.Name, hdr.Typeflag)
		}
	}
}
