// Package ociimage writes slotplane's container image without Docker: one tar file that is
// an OCI image layout (oci-layout, index.json, blobs/sha256/...) and, in the same bytes, a
// `docker save` archive (manifest.json), so skopeo, crane, podman and docker all take it.
//
// Nothing in the archive depends on the machine or the hour it was written on: every
// timestamp is the one the caller gives (the commit's), owners are root, entries are sorted
// and gzip carries no time. Two writes of the same Image are the same bytes, so one commit
// gives one digest. The package writes images; it never runs, pulls or pushes them.
//
// It is written by hand rather than with go-containerregistry. An image of one static binary
// is one layer and three small JSON documents; that library writes the OCI layout and the
// docker archive as two separate formats, so the one file both tools read would still be
// code of our own, and go.mod would gain a dependency tree for little.
package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The media types of what Write puts in the archive.
const (
	MediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// Image is everything an archive holds: one layer of files and the configuration a runtime
// starts the container from.
type Image struct {
	// Repository and Tag name the image, as ghcr.io/slotplane/slotplane and v0.1.0.
	Repository, Tag string
	// OS, Architecture and Variant are the platform the files are for (GOOS, GOARCH and,
	// for 32-bit ARM, v6 or v7).
	OS, Architecture, Variant string
	// Created is every timestamp in the archive: the config's, and every file's mtime.
	Created time.Time

	User       string // uid:gid; numeric, so the kubelet can tell it is not root
	Entrypoint []string
	Env        []string
	WorkingDir string
	// Labels go into the config (docker inspect shows them) and, the same, into the
	// manifest's annotations (registries show those).
	Labels map[string]string

	// Files are the one layer. Missing parent directories are added (root, 0755).
	Files []File
}

// File is one entry of the layer, owned by root.
type File struct {
	Path string      // absolute and clean, such as /usr/local/bin/slotplane
	Mode fs.FileMode // permission bits, with fs.ModeDir for a directory (and fs.ModeSticky)
	Data []byte      // a regular file's content
}

// Written says what Write wrote.
type Written struct {
	// Digest is the manifest's digest (sha256:...): what a registry reports after a push
	// that keeps the manifest, and what a kustomize images entry pins with digest:.
	Digest       string
	ConfigDigest string
	LayerDigest  string
	// Size is the archive's length in bytes.
	Size int64
}

// Reference is the image's name with its tag.
func (img Image) Reference() string { return img.Repository + ":" + img.Tag }

// The grammars of the OCI distribution spec: a repository (with the registry's host, and
// port, in front) and a tag.
var (
	repositoryPattern = regexp.MustCompile(`^(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*(?::[0-9]+)?/)?` +
		`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)
	tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
)

func (img Image) validate() error {
	switch {
	case !repositoryPattern.MatchString(img.Repository):
		return fmt.Errorf("repository %q: want a name without tag or digest, such as ghcr.io/slotplane/slotplane", img.Repository)
	case !tagPattern.MatchString(img.Tag):
		return fmt.Errorf("tag %q is not a valid tag", img.Tag)
	case img.OS == "" || img.Architecture == "":
		return errors.New("the platform (OS and architecture) is required")
	case img.Created.IsZero():
		return errors.New("a creation time is required: every timestamp of the archive is it")
	case len(img.Files) == 0:
		return errors.New("an image without files")
	}
	return nil
}

// Write writes img to w as one tar archive: an OCI image layout that is also a docker
// archive. The bytes depend on img alone.
func Write(w io.Writer, img Image) (Written, error) {
	if err := img.validate(); err != nil {
		return Written{}, fmt.Errorf("image %s: %w", img.Reference(), err)
	}
	layer, diffID, err := writeLayer(img.Files, img.Created)
	if err != nil {
		return Written{}, fmt.Errorf("image %s: layer: %w", img.Reference(), err)
	}
	layerDesc := describe(MediaTypeLayer, layer)

	created := img.Created.UTC().Truncate(time.Second).Format(time.RFC3339)
	config, err := json.Marshal(imageConfig{
		Created:      created,
		Architecture: img.Architecture,
		Variant:      img.Variant,
		OS:           img.OS,
		Config: runConfig{
			User:       img.User,
			Env:        img.Env,
			Entrypoint: img.Entrypoint,
			WorkingDir: img.WorkingDir,
			Labels:     img.Labels,
		},
		RootFS: rootFS{Type: "layers", DiffIDs: []string{diffID}},
		// docker history shows this line for the layer.
		History: []history{{Created: created, CreatedBy: "make image (hack/mkimage)"}},
	})
	if err != nil {
		return Written{}, fmt.Errorf("image %s: config: %w", img.Reference(), err)
	}
	configDesc := describe(MediaTypeConfig, config)

	manifest, err := json.Marshal(imageManifest{
		SchemaVersion: 2,
		MediaType:     MediaTypeManifest,
		Config:        configDesc,
		Layers:        []descriptor{layerDesc},
		Annotations:   img.Labels,
	})
	if err != nil {
		return Written{}, fmt.Errorf("image %s: manifest: %w", img.Reference(), err)
	}
	manifestDesc := describe(MediaTypeManifest, manifest)
	manifestDesc.Platform = &platform{Architecture: img.Architecture, OS: img.OS, Variant: img.Variant}
	// ref.name is the tag, as skopeo's oci-archive:FILE:TAG selects it; containerd's
	// importers name the image from the full reference.
	manifestDesc.Annotations = map[string]string{
		"org.opencontainers.image.ref.name": img.Tag,
		"io.containerd.image.name":          img.Reference(),
	}

	index, err := json.Marshal(imageIndex{SchemaVersion: 2, MediaType: MediaTypeIndex, Manifests: []descriptor{manifestDesc}})
	if err != nil {
		return Written{}, fmt.Errorf("image %s: index: %w", img.Reference(), err)
	}
	// What `docker load` and `podman load` read: the config and the layers by path.
	dockerManifest, err := json.Marshal([]dockerEntry{{
		Config:   blobPath(configDesc.Digest),
		RepoTags: []string{img.Reference()},
		Layers:   []string{blobPath(layerDesc.Digest)},
	}})
	if err != nil {
		return Written{}, fmt.Errorf("image %s: manifest.json: %w", img.Reference(), err)
	}

	blobs := map[string][]byte{
		blobPath(layerDesc.Digest):    layer,
		blobPath(configDesc.Digest):   config,
		blobPath(manifestDesc.Digest): manifest,
	}
	entries := []archiveEntry{
		{name: "oci-layout", data: []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{name: "index.json", data: index},
		{name: "manifest.json", data: dockerManifest},
		{name: "blobs/", dir: true},
		{name: "blobs/sha256/", dir: true},
	}
	for _, name := range slices.Sorted(maps.Keys(blobs)) {
		entries = append(entries, archiveEntry{name: name, data: blobs[name]})
	}
	cw := &countingWriter{w: w}
	if err := writeArchive(cw, entries, img.Created); err != nil {
		return Written{}, fmt.Errorf("image %s: archive: %w", img.Reference(), err)
	}
	return Written{Digest: manifestDesc.Digest, ConfigDigest: configDesc.Digest, LayerDigest: layerDesc.Digest, Size: cw.n}, nil
}

// writeLayer returns the layer's gzipped tar and the digest of the tar itself (the diff ID
// the config lists).
func writeLayer(files []File, created time.Time) (gz []byte, diffID string, err error) {
	entries, err := layerEntries(files)
	if err != nil {
		return nil, "", err
	}
	var buf bytes.Buffer
	// gzip.Writer leaves the header's time and name empty unless told: nothing of the hour.
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, "", err
	}
	diff := sha256.New()
	tw := tar.NewWriter(io.MultiWriter(zw, diff))
	for _, f := range entries {
		hdr := header(strings.TrimPrefix(f.Path, "/"), f.Mode, int64(len(f.Data)), created)
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, "", fmt.Errorf("%s: %w", f.Path, err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, "", fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), "sha256:" + hex.EncodeToString(diff.Sum(nil)), nil
}

// layerEntries checks the files' paths, adds the parent directories they lack and sorts
// them: a parent's path is a prefix of its children's, so it comes first.
func layerEntries(files []File) ([]File, error) {
	byPath := map[string]File{}
	for _, f := range files {
		switch {
		case !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/":
			return nil, fmt.Errorf("path %q: want an absolute, clean path below /", f.Path)
		case f.Mode&^(fs.ModeDir|fs.ModeSticky|fs.ModePerm) != 0:
			return nil, fmt.Errorf("%s: mode %v: only regular files and directories", f.Path, f.Mode)
		case f.Mode.IsDir() && len(f.Data) > 0:
			return nil, fmt.Errorf("%s: a directory with content", f.Path)
		}
		if _, dup := byPath[f.Path]; dup {
			return nil, fmt.Errorf("%s: given twice", f.Path)
		}
		byPath[f.Path] = f
	}
	for _, f := range files {
		for dir := path.Dir(f.Path); dir != "/"; dir = path.Dir(dir) {
			if d, ok := byPath[dir]; ok {
				if !d.Mode.IsDir() {
					return nil, fmt.Errorf("%s: its parent %s is a file", f.Path, dir)
				}
				continue
			}
			byPath[dir] = File{Path: dir, Mode: fs.ModeDir | 0o755}
		}
	}
	out := make([]File, 0, len(byPath))
	for _, p := range slices.Sorted(maps.Keys(byPath)) {
		out = append(out, byPath[p])
	}
	return out, nil
}

// archiveEntry is one entry of the outer archive.
type archiveEntry struct {
	name string
	dir  bool
	data []byte
}

func writeArchive(w io.Writer, entries []archiveEntry, created time.Time) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		mode := fs.FileMode(0o644)
		if e.dir {
			mode = fs.ModeDir | 0o755
		}
		if err := tw.WriteHeader(header(e.name, mode, int64(len(e.data)), created)); err != nil {
			return fmt.Errorf("%s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return fmt.Errorf("%s: %w", e.name, err)
		}
	}
	return tw.Close()
}

// header is a tar header that holds nothing of the machine writing it: root owns the entry
// (no user or group names), and its only time is created, to the second.
func header(name string, mode fs.FileMode, size int64, created time.Time) *tar.Header {
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     int64(mode.Perm()),
		Size:     size,
		ModTime:  created.UTC().Truncate(time.Second),
	}
	if mode&fs.ModeSticky != 0 {
		hdr.Mode |= 0o1000
	}
	if mode.IsDir() {
		hdr.Typeflag = tar.TypeDir
		hdr.Size = 0
		if !strings.HasSuffix(hdr.Name, "/") {
			hdr.Name += "/"
		}
	}
	return hdr
}

func describe(mediaType string, blob []byte) descriptor {
	sum := sha256.Sum256(blob)
	return descriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(blob))}
}

func blobPath(digest string) string {
	return "blobs/sha256/" + strings.TrimPrefix(digest, "sha256:")
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// The documents of the OCI image spec, with only the fields Write sets. encoding/json
// writes struct fields in order and map keys sorted, so each document has one encoding.
type (
	descriptor struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int64             `json:"size"`
		Annotations map[string]string `json:"annotations,omitempty"`
		Platform    *platform         `json:"platform,omitempty"`
	}
	platform struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
		Variant      string `json:"variant,omitempty"`
	}
	imageIndex struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Manifests     []descriptor `json:"manifests"`
	}
	imageManifest struct {
		SchemaVersion int               `json:"schemaVersion"`
		MediaType     string            `json:"mediaType"`
		Config        descriptor        `json:"config"`
		Layers        []descriptor      `json:"layers"`
		Annotations   map[string]string `json:"annotations,omitempty"`
	}
	imageConfig struct {
		Created      string    `json:"created"`
		Architecture string    `json:"architecture"`
		Variant      string    `json:"variant,omitempty"`
		OS           string    `json:"os"`
		Config       runConfig `json:"config"`
		RootFS       rootFS    `json:"rootfs"`
		History      []history `json:"history"`
	}
	runConfig struct {
		User       string            `json:"User,omitempty"`
		Env        []string          `json:"Env,omitempty"`
		Entrypoint []string          `json:"Entrypoint,omitempty"`
		WorkingDir string            `json:"WorkingDir,omitempty"`
		Labels     map[string]string `json:"Labels,omitempty"`
	}
	rootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	}
	history struct {
		Created   string `json:"created"`
		CreatedBy string `json:"created_by"`
	}
	// dockerEntry is one image of a docker archive's manifest.json.
	dockerEntry struct {
		Config   string   `json:"Config"`
		RepoTags []string `json:"RepoTags"`
		Layers   []string `json:"Layers"`
	}
)
