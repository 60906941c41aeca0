//go:build integration

package ociimage_test

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"slotplane/internal/ociimage"
)

// The real binary, built as make image builds it, packed, unpacked the way a runtime
// unpacks an image, and started from the unpacked root as the image's config says: its
// entrypoint, its environment, its user, chrooted into the root (in a user namespace of its
// own, so no privilege is needed). Behind the integration tag: the binary's first build with
// these flags compiles everything anew (minutes), and linking it takes tens of seconds.
func TestSlotplaneImage_RunsFromItsUnpackedRootAsItsUser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dir := t.TempDir()
	binary := filepath.Join(dir, "slotplane")
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	if err := ociimage.BuildBinary(ctx, goTool, "../..", binary); err != nil {
		t.Fatal(err)
	}
	platform, err := ociimage.BinaryPlatform(binary)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	img, err := ociimage.SlotplaneImage(ociimage.Release{
		Repository: "ghcr.io/slotplane/slotplane",
		Version:    "v0.0.0-test",
		Revision:   "0123456789abcdef0123456789abcdef01234567",
		Created:    created,
		Source:     "https://example.com/slotplane",
		Binary:     data,
		Platform:   platform,
	})
	if err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	written, err := ociimage.Write(&archive, img)
	if err != nil {
		t.Fatal(err)
	}
	// The real binary is 100 MB and more: one image, one digest, at that size too.
	if again, err := ociimage.Write(io.Discard, img); err != nil || again != written {
		t.Fatalf("a second write of the image: %+v (%v), the first %+v", again, err, written)
	}

	rootfs := filepath.Join(dir, "rootfs")
	u := unpack(t, archive.Bytes(), rootfs)
	c := u.config.Config
	if u.config.OS != "linux" || u.config.Architecture != runtime.GOARCH {
		t.Skipf("an image for %s/%s: this machine cannot run it", u.config.OS, u.config.Architecture)
	}
	uid, gid := parseUser(t, c.User)
	if uid == 0 || gid == 0 {
		t.Errorf("the image runs as %q: root", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{ociimage.BinaryPath}) {
		t.Errorf("entrypoint %v, want %s", c.Entrypoint, ociimage.BinaryPath)
	}
	for _, l := range []string{ociimage.LabelTitle, ociimage.LabelVersion, ociimage.LabelRevision, ociimage.LabelCreated, ociimage.LabelSource} {
		if c.Labels[l] == "" || u.manifest.Annotations[l] != c.Labels[l] {
			t.Errorf("label %s is %q, annotation %q", l, c.Labels[l], u.manifest.Annotations[l])
		}
	}

	// The root holds no C library or loader, so the binary must need none.
	entry := filepath.Join(rootfs, c.Entrypoint[0])
	f, err := elf.Open(entry)
	if err != nil {
		t.Fatal(err)
	}
	libs, _ := f.ImportedLibraries()
	interp := slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
	f.Close()
	if interp || len(libs) > 0 {
		t.Fatalf("the binary asks for a loader (%v) or libraries (%v): it cannot run in the image", interp, libs)
	}

	cmd := exec.CommandContext(ctx, c.Entrypoint[0], append(c.Entrypoint[1:], "--help")...)
	cmd.Env = c.Env
	cmd.Dir = c.WorkingDir
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot:                     rootfs,
		Cloneflags:                 syscall.CLONE_NEWUSER,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		Credential:                 &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true},
	}
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) {
		// User namespaces are off here (a sysctl, or a container that forbids them): start
		// it from the unpacked root without the chroot, as this user.
		t.Logf("no user namespace (%v): running %s without chroot", err, entry)
		cmd = exec.CommandContext(ctx, entry, append(c.Entrypoint[1:], "--help")...)
		cmd.Env = c.Env
		out, err = cmd.CombinedOutput()
	}
	// --help answers with the usage and exits 0; anything else (126, 127, a signal) is a
	// binary that did not start.
	if err != nil {
		t.Fatalf("%s --help: %v\n%s", c.Entrypoint[0], err, out)
	}
	if !strings.HasPrefix(string(out), "usage: slotplane <command>") {
		t.Errorf("%s --help printed no usage:\n%s", c.Entrypoint[0], out)
	}
	// The subcommands deploy/ runs the image with.
	for _, sub := range []string{"worker", "extender", "bridge", "api"} {
		if !strings.Contains(string(out), "\n  "+sub+" ") {
			t.Errorf("the usage lists no %s command:\n%s", sub, out)
		}
	}
}

// parseUser reads a config's numeric uid:gid, as the kubelet must to check runAsNonRoot.
func parseUser(t testing.TB, user string) (uid, gid int) {
	t.Helper()
	u, g, ok := strings.Cut(user, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil {
		t.Fatalf("user %q is not a numeric uid:gid", user)
	}
	return uid, gid
}
