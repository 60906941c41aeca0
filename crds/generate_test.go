package crds_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedFilesAreUpToDate regenerates the deepcopy code and the CRD YAML in a copy of
// the module and fails if any committed file differs: run `make generate` and commit.
func TestGeneratedFilesAreUpToDate(t *testing.T) {
	if os.Getenv("SLOTPLANE_CONTROLLER_GEN") == "" {
		t.Skip("SLOTPLANE_CONTROLLER_GEN is not set; `make test` sets it")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	for _, name := range []string{"Makefile", "go.mod", "go.sum", "hack", "crds", "tools"} {
		if err := os.CopyFS(filepath.Join(work, name), os.DirFS(filepath.Join(root, name))); err != nil {
			if err := copyFile(filepath.Join(root, name), filepath.Join(work, name)); err != nil {
				t.Fatalf("copy %s: %v", name, err)
			}
		}
	}
	generated := generatedFiles(t, filepath.Join(work, "crds"))
	for _, path := range generated {
		if err := os.Remove(filepath.Join(work, "crds", path)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("make", "-s", "generate")
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make generate: %v\n%s", err, out)
	}

	fresh := generatedFiles(t, filepath.Join(work, "crds"))
	if strings.Join(fresh, "\n") != strings.Join(generated, "\n") {
		t.Errorf("generated files differ; committed:\n%s\nfresh:\n%s", strings.Join(generated, "\n"), strings.Join(fresh, "\n"))
	}
	for _, path := range fresh {
		want, err := os.ReadFile(filepath.Join(work, "crds", path))
		if err != nil {
			t.Fatal(err)
		}
		have, err := os.ReadFile(filepath.Join(root, "crds", path))
		if err != nil || !bytes.Equal(want, have) {
			t.Errorf("crds/%s is stale: run `make generate` and commit the result", path)
		}
	}
}

// generatedFiles lists, below dir, the files controller-gen writes.
func generatedFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.Name() == "zz_generated.deepcopy.go" || strings.HasPrefix(rel, "manifests"+string(filepath.Separator)) {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o644)
}
