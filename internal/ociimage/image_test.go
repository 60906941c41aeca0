package ociimage_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"slotplane/internal/ociimage"
)

// The commit time every test image is made at.
var created = time.Date(2026, 11, 26, 6, 34, 13, 0, time.UTC)

func testImage() ociimage.Image {
	return ociimage.Image{
		Repository:   "registry.example.com/team/app",
		Tag:          "v1.2.3",
		OS:           "linux",
		Architecture: "amd64",
		Created:      created,
		User:         "65532:65532",
		Entrypoint:   []string{"/usr/local/bin/app"},
		Labels:       map[string]string{"org.opencontainers.image.version": "v1.2.3"},
		Files: []ociimage.File{
			{Path: "/usr/local/bin/app", Mode: 0o755, Data: []byte("\x7fELF not really")},
			{Path: "/etc/passwd", Mode: 0o644, Data: []byte("app:x:65532:65532::/:/sbin/nologin\n")},
			{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		},
	}
}

func write(t testing.TB, img ociimage.Image) ([]byte, ociimage.Written) {
	t.Helper()
	var buf bytes.Buffer
	w, err := ociimage.Write(&buf, img)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	if w.Size != int64(buf.Len()) {
		t.Errorf("Written.Size %d, the archive has %d bytes", w.Size, buf.Len())
	}
	return buf.Bytes(), w
}

// One image gives one archive, byte for byte, whenever and wherever it is written; any
// change to what the image holds gives another digest. Its name is no part of the image:
// another name changes the archive (index.json, manifest.json), not the digest.
func TestWrite_SameImageSameBytesAndAnyChangeAnotherDigest(t *testing.T) {
	first, want := write(t, testImage())
	second, again := write(t, testImage())
	if !bytes.Equal(first, second) || want != again {
		t.Fatalf("two writes of one image differ: %+v and %+v", want, again)
	}

	type outcome int
	const (
		sameArchive outcome = iota
		sameDigest          // another archive
		otherDigest
	)
	cases := map[string]struct {
		change func(*ociimage.Image)
		want   outcome
	}{
		"the files given in another order": {func(img *ociimage.Image) { slices.Reverse(img.Files) }, sameArchive},
		"a parent directory given as the default would be": {func(img *ociimage.Image) {
			img.Files = append(img.Files, ociimage.File{Path: "/usr/local", Mode: fs.ModeDir | 0o755})
		}, sameArchive},
		"the tag":              {func(img *ociimage.Image) { img.Tag = "v1.2.4" }, sameDigest},
		"the repository":       {func(img *ociimage.Image) { img.Repository = "registry.example.com/team/other" }, sameDigest},
		"a byte of the binary": {func(img *ociimage.Image) { img.Files[0].Data = []byte("\x7fELF not really!") }, otherDigest},
		"a file's mode":        {func(img *ociimage.Image) { img.Files[1].Mode = 0o600 }, otherDigest},
		"another file": {func(img *ociimage.Image) {
			img.Files = append(img.Files, ociimage.File{Path: "/etc/group", Mode: 0o644})
		}, otherDigest},
		"the commit time": {func(img *ociimage.Image) { img.Created = img.Created.Add(time.Second) }, otherDigest},
		"a label": {func(img *ociimage.Image) {
			img.Labels = map[string]string{"org.opencontainers.image.version": "v1.2.4"}
		}, otherDigest},
		"the user":         {func(img *ociimage.Image) { img.User = "0:0" }, otherDigest},
		"the entrypoint":   {func(img *ociimage.Image) { img.Entrypoint = []string{"/app"} }, otherDigest},
		"the architecture": {func(img *ociimage.Image) { img.Architecture = "arm64" }, otherDigest},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			img := testImage()
			tc.change(&img)
			archive, got := write(t, img)
			switch {
			case tc.want == sameArchive && !bytes.Equal(archive, first):
				t.Errorf("another archive (digest %s), want the unchanged image's bytes", got.Digest)
			case tc.want == sameDigest && (got.Digest != want.Digest || bytes.Equal(archive, first)):
				t.Errorf("digest %s, want the unchanged image's %s in an archive that names it anew", got.Digest, want.Digest)
			case tc.want == otherDigest && got.Digest == want.Digest:
				t.Errorf("digest %s is the unchanged image's", got.Digest)
			}
		})
	}
}

// The archive is an OCI layout whose blobs match their digests and a docker archive that
// names the same blobs, and nothing in it says who wrote it, where or when.
func TestWrite_ArchiveIsAnOCILayoutAndADockerArchiveOfTheSameBlobs(t *testing.T) {
	img := testImage()
	archive, written := write(t, img)
	rootfs := t.TempDir()
	u := unpack(t, archive, rootfs)

	md := u.index.Manifests[0]
	if md.Digest != written.Digest || md.Platform == nil || md.Platform.OS != "linux" || md.Platform.Architecture != "amd64" {
		t.Errorf("index.json names %s for %+v; Write said %s for linux/amd64", md.Digest, md.Platform, written.Digest)
	}
	if got := md.Annotations["org.opencontainers.image.ref.name"]; got != img.Tag {
		t.Errorf("ref.name %q, want the tag %q (skopeo's oci-archive:FILE:TAG)", got, img.Tag)
	}
	if got := u.docker[0].RepoTags; !slices.Equal(got, []string{img.Reference()}) {
		t.Errorf("manifest.json RepoTags %v, want %s", got, img.Reference())
	}
	if u.manifest.Config.Digest != written.ConfigDigest || u.manifest.Layers[0].Digest != written.LayerDigest {
		t.Errorf("Written %+v does not name the manifest's blobs", written)
	}
	if u.config.Created != "2026-11-26T06:34:13Z" || u.config.OS != "linux" || u.config.Architecture != "amd64" {
		t.Errorf("config: created %s for %s/%s", u.config.Created, u.config.OS, u.config.Architecture)
	}

	// Parents come before their children, added where the image did not list them.
	var layerNames []string
	for _, h := range u.layers {
		layerNames = append(layerNames, h.Name)
	}
	wantNames := []string{"etc/", "etc/passwd", "tmp/", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/app"}
	if diff := cmp.Diff(wantNames, layerNames); diff != "" {
		t.Errorf("layer entries (-want +got):\n%s", diff)
	}
	for _, h := range append(slices.Clone(u.archive), u.layers...) {
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(created) ||
			!h.AccessTime.IsZero() || !h.ChangeTime.IsZero() || len(h.PAXRecords) > 0 {
			t.Errorf("entry %s: owner %d:%d (%q:%q), times %v %v %v, PAX %v; want root, the commit time only",
				h.Name, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime, h.AccessTime, h.ChangeTime, h.PAXRecords)
		}
	}

	data, err := os.ReadFile(filepath.Join(rootfs, "usr/local/bin/app"))
	if err != nil || !bytes.Equal(data, img.Files[0].Data) {
		t.Errorf("the unpacked binary is %q (%v)", data, err)
	}
	modes := map[string]fs.FileMode{"usr/local/bin/app": 0o755, "etc/passwd": 0o644, "tmp": fs.ModeDir | fs.ModeSticky | 0o777, "usr": fs.ModeDir | 0o755}
	for name, want := range modes {
		fi, err := os.Lstat(filepath.Join(rootfs, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s unpacks with mode %v, want %v", name, fi.Mode(), want)
		}
	}
}

func TestWrite_RefusesWhatNoRuntimeCouldRun(t *testing.T) {
	cases := map[string]func(*ociimage.Image){
		"a tag in the repository": func(img *ociimage.Image) { img.Repository = "registry.example.com/team/app:v1" },
		"an upper-case path":      func(img *ociimage.Image) { img.Repository = "registry.example.com/Team/app" },
		"a tag with a space":      func(img *ociimage.Image) { img.Tag = "v1 2" },
		"no platform":             func(img *ociimage.Image) { img.Architecture = "" },
		"no creation time":        func(img *ociimage.Image) { img.Created = time.Time{} },
		"no files":                func(img *ociimage.Image) { img.Files = nil },
		"a relative path":         func(img *ociimage.Image) { img.Files[0].Path = "usr/local/bin/app" },
		"an unclean path":         func(img *ociimage.Image) { img.Files[0].Path = "/usr/local/../bin/app" },
		"a path given twice":      func(img *ociimage.Image) { img.Files[1].Path = img.Files[0].Path },
		"a file under a file":     func(img *ociimage.Image) { img.Files[1].Path = "/usr/local/bin/app/passwd" },
		"a symlink mode":          func(img *ociimage.Image) { img.Files[1].Mode = fs.ModeSymlink | 0o777 },
		"a directory with data":   func(img *ociimage.Image) { img.Files[2].Data = []byte("x") },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			img := testImage()
			change(&img)
			var buf bytes.Buffer
			if _, err := ociimage.Write(&buf, img); err == nil {
				t.Errorf("Write took it")
			} else if buf.Len() > 0 {
				t.Errorf("Write refused (%v) but wrote %d bytes", err, buf.Len())
			}
		})
	}
	// A registry's port is not a tag.
	img := testImage()
	img.Repository = "localhost:5000/team/app"
	if _, err := ociimage.Write(new(bytes.Buffer), img); err != nil {
		t.Errorf("a repository with a registry port: %v", err)
	}
}

// The slotplane image: the binary as entrypoint, run by a numeric user that is not root,
// the user named in /etc/passwd, and the labels a registry shows, in the config and in the
// manifest.
func TestSlotplaneImage_NonRootUserBinaryAsEntrypointAndLabels(t *testing.T) {
	release := ociimage.Release{
		Repository: "ghcr.io/slotplane/slotplane",
		Version:    "v0.1.0",
		Revision:   "d7be056a0e312863bcda307b7232be8bef256b7e",
		Created:    created.Add(500 * time.Millisecond), // a commit's time has no fraction; this one is cut
		Source:     "https://example.com/slotplane",
		Binary:     []byte("\x7fELF not really"),
		Platform:   ociimage.Platform{OS: "linux", Architecture: "arm", Variant: "v7"},
	}
	img, err := ociimage.SlotplaneImage(release)
	if err != nil {
		t.Fatal(err)
	}
	archive, _ := write(t, img)
	rootfs := t.TempDir()
	u := unpack(t, archive, rootfs)

	c := u.config.Config
	if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{ociimage.BinaryPath}) || len(c.Cmd) > 0 {
		t.Errorf("config runs %v %v as %q; want the binary alone as 65532:65532", c.Entrypoint, c.Cmd, c.User)
	}
	wantLabels := map[string]string{
		ociimage.LabelTitle:       "slotplane",
		ociimage.LabelDescription: "A control plane for Spark and Flink batch jobs on Kubernetes",
		ociimage.LabelVersion:     "v0.1.0",
		ociimage.LabelRevision:    "d7be056a0e312863bcda307b7232be8bef256b7e",
		ociimage.LabelCreated:     "2026-11-26T06:34:13Z",
		ociimage.LabelSource:      "https://example.com/slotplane",
	}
	if diff := cmp.Diff(wantLabels, c.Labels); diff != "" {
		t.Errorf("config labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantLabels, u.manifest.Annotations); diff != "" {
		t.Errorf("manifest annotations (-want +got):\n%s", diff)
	}
	if u.config.Created != "2026-11-26T06:34:13Z" {
		t.Errorf("config created %s", u.config.Created)
	}
	if u.index.Manifests[0].Annotations["io.containerd.image.name"] != "ghcr.io/slotplane/slotplane:v0.1.0" {
		t.Errorf("index annotations %v", u.index.Manifests[0].Annotations)
	}

	fi, err := os.Stat(filepath.Join(rootfs, ociimage.BinaryPath))
	if err != nil || fi.Mode() != 0o755 {
		t.Errorf("the binary: %v (%v), want mode 0755", fi, err)
	}
	passwd, err := os.ReadFile(filepath.Join(rootfs, "etc/passwd"))
	if err != nil || !strings.HasPrefix(string(passwd), "slotplane:x:65532:65532:") {
		t.Errorf("/etc/passwd is %q (%v)", passwd, err)
	}
	// Nothing but the binary, the user's names and an empty /tmp.
	var names []string
	for _, h := range u.layers {
		names = append(names, h.Name)
	}
	want := []string{"etc/", "etc/group", "etc/passwd", "tmp/", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/slotplane"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("the image's files (-want +got):\n%s", diff)
	}

	// Without a source, no source label rather than a guess.
	release.Source = ""
	img, err = ociimage.SlotplaneImage(release)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := img.Labels[ociimage.LabelSource]; ok {
		t.Errorf("a source label without a source: %q", img.Labels[ociimage.LabelSource])
	}
}

func TestSlotplaneImage_RefusesAReleaseWithoutItsFacts(t *testing.T) {
	full := ociimage.Release{Repository: "ghcr.io/slotplane/slotplane", Version: "v0.1.0", Revision: "abc", Created: created, Binary: []byte("x")}
	cases := map[string]func(*ociimage.Release){
		"no version":  func(r *ociimage.Release) { r.Version = "" },
		"no revision": func(r *ociimage.Release) { r.Revision = "" },
		"no time":     func(r *ociimage.Release) { r.Created = time.Time{} },
		"no binary":   func(r *ociimage.Release) { r.Binary = nil },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			r := full
			change(&r)
			if _, err := ociimage.SlotplaneImage(r); err == nil {
				t.Errorf("SlotplaneImage took it")
			}
		})
	}
}

// The test binary is linked with cgo or built without -trimpath (go test does neither
// unless asked), so the image must not take it.
func TestBinaryPlatform_RefusesABinaryBuiltForAnotherRootFS(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := ociimage.BinaryPlatform(self)
	if err == nil {
		t.Skipf("this test binary is static and trimmed (%+v): nothing to refuse", p)
	}
	if !strings.Contains(err.Error(), "cgo") && !strings.Contains(err.Error(), "-trimpath") {
		t.Errorf("refused for another reason: %v", err)
	}
	if _, err := ociimage.BinaryPlatform(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Errorf("a missing file has a platform")
	}
}

func TestSourceURL_HTTPSWithoutCredentials(t *testing.T) {
	cases := map[string]string{
		"git@github.com:slotplane/slotplane.git":                       "https://github.com/slotplane/slotplane",
		"https://github.com/slotplane/slotplane.git":                   "https://github.com/slotplane/slotplane",
		"https://x-access-token:s3cret@github.com/slotplane/slotplane": "https://github.com/slotplane/slotplane",
		"ssh://git@git.example.com:2222/team/slotplane.git":            "https://git.example.com/team/slotplane",
		"https://git.example.com/team/slotplane/\n":                    "https://git.example.com/team/slotplane",
		"/srv/git/slotplane":                                           "",
		"file:///srv/git/slotplane":                                    "",
		"":                                                             "",
	}
	for remote, want := range cases {
		if got := ociimage.SourceURL(remote); got != want {
			t.Errorf("SourceURL(%q) = %q, want %q", remote, got, want)
		}
	}
}
