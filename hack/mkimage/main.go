// Command mkimage writes slotplane's container image as one OCI archive, without Docker
// (`make image`). It builds the static binary of the checkout it runs in, takes the
// revision and the time from the commit, and prints the digest: a second run on the same
// commit prints the same one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"slotplane/internal/ociimage"
)

func main() {
	out := flag.String("out", "bin/slotplane-image.tar", "the archive to write")
	repository := flag.String("repository", "ghcr.io/slotplane/slotplane", "the image's name, without the tag")
	version := flag.String("version", "", "the image's tag and version label (the Makefile's VERSION)")
	source := flag.String("source", "", "the source label's URL; empty takes the git remote origin's, if there is one")
	goTool := flag.String("go", "go", "the go command to build the binary with")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *out, *repository, *version, *source, *goTool); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out, repository, version, source, goTool string) error {
	if version == "" {
		return errors.New("-version is required")
	}
	revision, err := git(ctx, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	seconds, err := git(ctx, "log", "-1", "--format=%ct")
	if err != nil {
		return err
	}
	unix, err := strconv.ParseInt(seconds, 10, 64)
	if err != nil {
		return fmt.Errorf("commit time %q: %w", seconds, err)
	}
	if source == "" {
		// No origin is no error: the label is then left out rather than guessed.
		remote, _ := git(ctx, "remote", "get-url", "origin")
		source = ociimage.SourceURL(remote)
	}
	// Uncommitted changes go into the binary but not into the labels, which name the
	// commit: say so rather than refuse, since building before committing is ordinary.
	if status, err := git(ctx, "status", "--porcelain"); err != nil {
		return err
	} else if status != "" {
		fmt.Fprintf(os.Stderr, "mkimage: the working tree has changes that commit %.12s lacks; the image holds them under its revision label\n", revision)
	}

	tmp, err := os.MkdirTemp("", "mkimage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	binary := filepath.Join(tmp, "slotplane")
	fmt.Printf(">> building the static binary (CGO_ENABLED=0 GOOS=linux go build %s)\n", strings.Join(ociimage.BuildFlags, " "))
	if err := ociimage.BuildBinary(ctx, goTool, ".", binary); err != nil {
		return err
	}
	platform, err := ociimage.BinaryPlatform(binary)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("read the binary: %w", err)
	}
	img, err := ociimage.SlotplaneImage(ociimage.Release{
		Repository: repository,
		Version:    version,
		Revision:   revision,
		Created:    time.Unix(unix, 0),
		Source:     source,
		Binary:     data,
		Platform:   platform,
	})
	if err != nil {
		return err
	}
	written, err := writeFile(out, img)
	if err != nil {
		return err
	}

	platformName := platform.OS + "/" + platform.Architecture
	if platform.Variant != "" {
		platformName += "/" + platform.Variant
	}
	fmt.Printf(">> wrote %s (%.1f MB)\n", out, float64(written.Size)/1e6)
	fmt.Printf("   image    %s (%s)\n", img.Reference(), platformName)
	fmt.Printf("   digest   %s\n", written.Digest)
	fmt.Printf("   revision %s, created %s\n", revision, img.Created.Format(time.RFC3339))
	if source == "" {
		fmt.Println("   (no git remote origin: no source label; -source sets one)")
	}
	fmt.Printf(`
Push it to your registry with skopeo, which keeps the digest:
   skopeo copy oci-archive:%[1]s docker://registry.example.com/slotplane:%[2]s
Then run it from an overlay of deploy/ (docs/operations.md, "Deploying"):
   images:
   - name: %[3]s
     newName: registry.example.com/slotplane
     digest: %[4]s
`, out, img.Tag, repository, written.Digest)
	return nil
}

// writeFile writes the archive beside out and renames it into place, so an interrupted run
// leaves no half archive behind.
func writeFile(out string, img ociimage.Image) (ociimage.Written, error) {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return ociimage.Written{}, err
	}
	f, err := os.CreateTemp(filepath.Dir(out), filepath.Base(out)+".tmp-*")
	if err != nil {
		return ociimage.Written{}, err
	}
	defer os.Remove(f.Name()) // after the rename, a no-op
	written, err := ociimage.Write(f, img)
	if err != nil {
		f.Close()
		return ociimage.Written{}, err
	}
	if err := f.Close(); err != nil {
		return ociimage.Written{}, fmt.Errorf("write %s: %w", out, err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return ociimage.Written{}, err
	}
	if err := os.Rename(f.Name(), out); err != nil {
		return ociimage.Written{}, fmt.Errorf("write %s: %w", out, err)
	}
	return written, nil
}

// git runs a git command in the checkout and returns its output, trimmed.
func git(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "git", args...).Output()
	if err != nil {
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
