package lab

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestWriteDirImage writes an image of a small tree and reads it back as
// containerd would: index, manifest, config and the layer's entries.
func TestWriteDirImage(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"bin", "tmp", "usr/bin"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "tmp"), 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin/busybox"), []byte("ELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "bin/busybox"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/bin/busybox", filepath.Join(root, "bin/sh")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "image.tar")
	ref := "docker.io/example/tools:v1"
	cfg := ImageConfig{Cmd: []string{"/bin/sh"}, Env: []string{"PATH=/bin"}}
	if err := WriteDirImage(root, ref, cfg, out); err != nil {
		t.Fatal(err)
	}

	files := readTar(t, out)
	var index struct {
		Manifests []ociDescriptor `json:"manifests"`
	}
	mustUnmarshal(t, files["index.json"], &index)
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations["io.containerd.image.name"] != ref ||
		index.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v1" {
		t.Fatalf("index.json: %s", files["index.json"])
	}
	var manifest struct {
		Config ociDescriptor   `json:"config"`
		Layers []ociDescriptor `json:"layers"`
	}
	mustUnmarshal(t, blob(t, files, index.Manifests[0].Digest), &manifest)
	var config struct {
		Config map[string]any `json:"config"`
	}
	mustUnmarshal(t, blob(t, files, manifest.Config.Digest), &config)
	want := map[string]any{"Cmd": []any{"/bin/sh"}, "Env": []any{"PATH=/bin"}, "WorkingDir": "/"}
	if !reflect.DeepEqual(config.Config, want) {
		t.Errorf("config %v, want %v (no Entrypoint, so a pod's args replace Cmd)", config.Config, want)
	}
	if len(manifest.Layers) != 1 {
		t.Fatalf("%d layers, want 1", len(manifest.Layers))
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob(t, files, manifest.Layers[0].Digest)))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.ModTime.Unix() != 0 {
			t.Errorf("%s: uid %d gid %d time %v, want root's and the epoch", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		e := fmt.Sprintf("%s %c %o", h.Name, h.Typeflag, h.Mode)
		if h.Linkname != "" {
			e += " -> " + h.Linkname
		}
		got = append(got, e)
	}
	wantEntries := []string{
		"bin/ 5 755",
		"bin/busybox 0 755",
		"bin/sh 2 777 -> /bin/busybox",
		"tmp/ 5 1777",
		"usr/ 5 755",
		"usr/bin/ 5 755",
	}
	if !reflect.DeepEqual(got, wantEntries) {
		t.Errorf("layer entries\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantEntries, "\n"))
	}
}

func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = b
	}
}

func blob(t *testing.T, files map[string][]byte, digest string) []byte {
	t.Helper()
	b, ok := files["blobs/sha256/"+strings.TrimPrefix(digest, "sha256:")]
	if !ok {
		t.Fatalf("no blob %s", digest)
	}
	return b
}

func mustUnmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}
