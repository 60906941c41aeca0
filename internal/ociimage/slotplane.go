package ociimage

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"
)

// What the slotplane image is: the static binary, run by a user that is not root, with no
// shell or package manager for anything that gets into the container to use.
const (
	// BinaryPath is where the binary sits, and the entrypoint.
	BinaryPath = "/usr/local/bin/slotplane"
	// UID and GID are the user's: the pods of deploy/ set the same in runAsUser and
	// runAsGroup, and a numeric user lets the kubelet check runAsNonRoot.
	UID = 65532
	GID = 65532
)

// The labels the image carries, in its config and as manifest annotations. There is no
// org.opencontainers.image.licenses: the repository states no license.
const (
	LabelTitle       = "org.opencontainers.image.title"
	LabelDescription = "org.opencontainers.image.description"
	LabelVersion     = "org.opencontainers.image.version"
	LabelRevision    = "org.opencontainers.image.revision"
	LabelCreated     = "org.opencontainers.image.created"
	LabelSource      = "org.opencontainers.image.source"
)

// Release is what one build of the image is made of.
type Release struct {
	Repository string // ghcr.io/slotplane/slotplane
	Version    string // the tag, and the version label
	Revision   string // the commit built
	// Created is the commit's time, so a rebuild of the commit is the same image.
	Created time.Time
	// Source is where the code is (an https URL); empty leaves the label out.
	Source string
	// Binary is the static slotplane binary; Platform is what it was built for
	// (BinaryPlatform reads it).
	Binary   []byte
	Platform Platform
}

// Platform is what a binary was built for, as the image's config names it.
type Platform struct {
	OS, Architecture, Variant string
}

// SlotplaneImage is the image of a release.
func SlotplaneImage(r Release) (Image, error) {
	if r.Version == "" || r.Revision == "" || r.Created.IsZero() || len(r.Binary) == 0 {
		return Image{}, errors.New("a release needs a version, a revision, a creation time and a binary")
	}
	created := r.Created.UTC().Truncate(time.Second)
	labels := map[string]string{
		LabelTitle:       "slotplane",
		LabelDescription: "A control plane for Spark and Flink batch jobs on Kubernetes",
		LabelVersion:     r.Version,
		LabelRevision:    r.Revision,
		LabelCreated:     created.Format(time.RFC3339),
	}
	if r.Source != "" {
		labels[LabelSource] = r.Source
	}
	return Image{
		Repository:   r.Repository,
		Tag:          r.Version,
		OS:           r.Platform.OS,
		Architecture: r.Platform.Architecture,
		Variant:      r.Platform.Variant,
		Created:      created,
		User:         fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint:   []string{BinaryPath},
		Env:          []string{"PATH=/usr/local/bin"},
		WorkingDir:   "/",
		Labels:       labels,
		Files: []File{
			{Path: BinaryPath, Mode: 0o755, Data: r.Binary},
			// Names for the uid and gid, for whatever looks them up (os/user, ps on the
			// node); the home does not exist and there is no shell to log in with.
			{Path: "/etc/passwd", Mode: 0o644, Data: fmt.Appendf(nil, "slotplane:x:%d:%d:slotplane:/nonexistent:/sbin/nologin\n", UID, GID)},
			{Path: "/etc/group", Mode: 0o644, Data: fmt.Appendf(nil, "slotplane:x:%d:\n", GID)},
			// os.TempDir is /tmp. deploy/ mounts an emptyDir there over the read-only
			// root; a plain `docker run` gets this one.
			{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		},
	}, nil
}

// BuildFlags are the go build flags of the image's binary: -trimpath keeps the building
// machine's paths out (so two machines build the same bytes), and -s -w drop the symbol
// table and DWARF, which no one reads in a container (panics print their stacks without
// them).
var BuildFlags = []string{"-trimpath", "-ldflags=-s -w"}

// BuildBinary builds ./cmd/slotplane of the module in moduleDir into out, static
// (CGO_ENABLED=0: the image has no C library) and for Linux, with goTool (go, or the
// Makefile's $(GO)). The go command's output goes to stderr.
func BuildBinary(ctx context.Context, goTool, moduleDir, out string) error {
	args := append([]string{"build"}, BuildFlags...)
	args = append(args, "-o", out, "./cmd/slotplane")
	cmd := exec.CommandContext(ctx, goTool, args...)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build the binary (CGO_ENABLED=0 GOOS=linux %s %s): %w", goTool, strings.Join(args, " "), err)
	}
	return nil
}

// BinaryPlatform reads the platform of a Go binary from its build information, and refuses
// a binary the image cannot hold: one linked with cgo (there is no C library to load) or
// built without -trimpath (its bytes would depend on where it was built).
func BinaryPlatform(file string) (Platform, error) {
	info, err := buildinfo.ReadFile(file)
	if err != nil {
		return Platform{}, fmt.Errorf("read the build information of %s: %w", file, err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	switch {
	case settings["CGO_ENABLED"] != "0":
		return Platform{}, fmt.Errorf("%s is linked with cgo: build it with CGO_ENABLED=0, the image has no C library", file)
	case settings["-trimpath"] != "true":
		return Platform{}, fmt.Errorf("%s was built without -trimpath: its bytes depend on where it was built", file)
	case settings["GOOS"] == "" || settings["GOARCH"] == "":
		return Platform{}, fmt.Errorf("%s names no GOOS or GOARCH", file)
	}
	p := Platform{OS: settings["GOOS"], Architecture: settings["GOARCH"]}
	if p.Architecture == "arm" {
		// GOARM is 5, 6 or 7, maybe with ,softfloat; the OCI variants are v5, v6 and v7.
		arm, _, _ := strings.Cut(settings["GOARM"], ",")
		p.Variant = "v" + arm
	}
	return p, nil
}

// SourceURL turns a git remote into the URL the source label shows: https, without the
// credentials a remote URL can carry, without .git. A remote it cannot read gives "".
func SourceURL(remote string) string {
	remote = strings.TrimSpace(remote)
	if remote == "" {
		return ""
	}
	// git@github.com:owner/repo.git, the scp-like form.
	if !strings.Contains(remote, "://") {
		hostPart, repo, ok := strings.Cut(remote, ":")
		if !ok || strings.Contains(hostPart, "/") {
			return "" // a local path
		}
		if _, host, found := strings.Cut(hostPart, "@"); found {
			hostPart = host
		}
		remote = "https://" + hostPart + "/" + strings.TrimPrefix(repo, "/")
	}
	u, err := url.Parse(remote)
	if err != nil || u.Host == "" {
		return ""
	}
	switch u.Scheme {
	case "https", "http", "ssh", "git":
	default:
		return "" // file:// and the like say nothing to a reader of the image
	}
	return (&url.URL{Scheme: "https", Host: u.Hostname(), Path: strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), ".git")}).String()
}
