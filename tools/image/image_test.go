package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// Stamped into the test build; distinct from anything a real build uses.
	testVersion = "0.0.0-test.1"
	testCommit  = "0123456789abcdef0123456789abcdef01234567-dirty"

	// helmChartConfig is the config media type of a chart pushed by helm.
	helmChartConfig = "application/vnd.cncf.helm.config.v1+json"
)

// testPlatforms are the platforms make images builds.
var testPlatforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// elfMachine is the ELF machine each architecture's binary must be for.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// TestImages builds both images as make images does, pushes them to an
// in-process registry, pulls them back, checks what a cluster relies on
// (platforms, non-root user, entrypoint, labels, a static binary for the
// right machine) and runs the binary of this machine's platform. With
// HELM set (make images-test), it pushes the packaged charts there too and
// pulls one back.
func TestImages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds xcc-syncer and coredns for two platforms")
	}
	ctx := t.Context()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	layouts := t.TempDir()
	if _, err := build(ctx, buildOptions{
		Src:       repo,
		Out:       layouts,
		Version:   testVersion,
		Commit:    testCommit,
		Source:    defaultSource,
		Platforms: testPlatforms,
		Binaries:  binaryNames(),
		Log:       testLog{t},
	}); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	reg := strings.TrimPrefix(srv.URL, "http://") + "/xcc-dns"

	if err := push(ctx, pushOptions{Layouts: layouts, Registry: reg, Tag: "9.9.9", Binaries: binaryNames(), Log: testLog{t}}); err == nil {
		t.Error("push of a tag other than the version built succeeded")
	}
	if err := push(ctx, pushOptions{Layouts: layouts, Registry: reg, Tag: testVersion, Binaries: binaryNames(), Log: testLog{t}}); err != nil {
		t.Fatal(err)
	}

	wantLabels := func(bin string) map[string]string {
		return map[string]string{labelTitle: bin, labelVersion: testVersion, labelRevision: testCommit, labelSource: defaultSource}
	}
	for _, bin := range binaryNames() {
		t.Run(bin, func(t *testing.T) {
			ref, err := name.NewTag(reg + "/" + bin + ":" + testVersion)
			if err != nil {
				t.Fatal(err)
			}
			idx, err := remote.Index(ref, remote.WithContext(ctx))
			if err != nil {
				t.Fatalf("pulling %s: %v", ref, err)
			}
			im, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			if im.MediaType != types.OCIImageIndex {
				t.Errorf("index media type %s, want %s", im.MediaType, types.OCIImageIndex)
			}
			if !reflect.DeepEqual(im.Annotations, wantLabels(bin)) {
				t.Errorf("index annotations %v, want %v", im.Annotations, wantLabels(bin))
			}
			var platforms []string
			var hostBinary []byte
			for _, d := range im.Manifests {
				if d.Platform == nil {
					t.Fatalf("manifest %s has no platform", d.Digest)
				}
				platforms = append(platforms, d.Platform.String())
				img, err := idx.Image(d.Digest)
				if err != nil {
					t.Fatal(err)
				}
				exe := checkImage(t, img, bin, *d.Platform, wantLabels(bin))
				if d.Platform.OS == runtime.GOOS && d.Platform.Architecture == runtime.GOARCH {
					hostBinary = exe
				}
			}
			var want []string
			for _, p := range testPlatforms {
				want = append(want, p.String())
			}
			slices.Sort(platforms)
			if !slices.Equal(platforms, want) {
				t.Errorf("index platforms %v, want %v", platforms, want)
			}
			if hostBinary == nil {
				t.Skipf("no image for this machine's platform %s/%s to run", runtime.GOOS, runtime.GOARCH)
			}
			checkRuns(t, bin, hostBinary)
		})
	}

	t.Run("charts", func(t *testing.T) {
		helm := os.Getenv("HELM")
		if helm == "" {
			t.Skip("HELM unset (make images-test sets it): charts not pushed")
		}
		checkCharts(t, helm, repo, reg)
	})
}

// checkImage checks one platform's image and returns its binary.
func checkImage(t *testing.T, img v1.Image, bin string, p v1.Platform, labels map[string]string) []byte {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
		t.Errorf("%s: manifest %s with config %s, want OCI media types", p, m.MediaType, m.Config.MediaType)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != p.OS || cfg.Architecture != p.Architecture {
		t.Errorf("%s: config says %s/%s", p, cfg.OS, cfg.Architecture)
	}
	uid, gid, ok := strings.Cut(cfg.Config.User, ":")
	if u, err := strconv.Atoi(uid); err != nil || u == 0 || !ok || gid == "" {
		t.Errorf("%s: user %q, want a numeric non-root uid:gid", p, cfg.Config.User)
	}
	entrypoint := path.Join(binDir, bin)
	if !slices.Equal(cfg.Config.Entrypoint, []string{entrypoint}) {
		t.Errorf("%s: entrypoint %q, want [%s]", p, cfg.Config.Entrypoint, entrypoint)
	}
	if !reflect.DeepEqual(cfg.Config.Labels, labels) {
		t.Errorf("%s: labels %v, want %v", p, cfg.Config.Labels, labels)
	}
	if cfg.RootFS.Type != "layers" {
		t.Errorf("%s: rootfs type %q, want layers", p, cfg.RootFS.Type)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%s: %d layers, want the binary's alone", p, len(layers))
	}
	exe, hdr, err := fileFromLayer(layers[0], strings.TrimPrefix(entrypoint, "/"))
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	if hdr.Uid != 0 || hdr.Mode&0o022 != 0 || hdr.Mode&0o111 == 0 {
		t.Errorf("%s: %s is uid %d mode %o, want root-owned, executable, writable by nobody else", p, entrypoint, hdr.Uid, hdr.Mode)
	}
	f, err := elf.NewFile(bytes.NewReader(exe))
	if err != nil {
		t.Fatalf("%s: %s is not an ELF binary: %v", p, entrypoint, err)
	}
	if f.Machine != elfMachine[p.Architecture] {
		t.Errorf("%s: binary for %s, want %s", p, f.Machine, elfMachine[p.Architecture])
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("%s: binary has a dynamic loader; want static (CGO_ENABLED=0)", p)
		}
	}
	return exe
}

// fileFromLayer returns the content and header of file in the layer's tar.
func fileFromLayer(l v1.Layer, file string) ([]byte, *tar.Header, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, nil, err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, nil, errors.New(file + " is not in the layer")
		}
		if err != nil {
			return nil, nil, err
		}
		if hdr.Name == file && hdr.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			return b, hdr, err
		}
	}
}

// checkRuns runs the binary pulled back and checks it reports the version
// and commit it was stamped with.
func checkRuns(t *testing.T, bin string, exe []byte) {
	t.Helper()
	file := filepath.Join(t.TempDir(), bin)
	if err := os.WriteFile(file, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	var args, want []string
	switch bin {
	case "xcc-syncer":
		args = []string{"version"}
		want = []string{"xcc-syncer " + testVersion + " (commit " + testCommit + ","}
	case "coredns":
		args = []string{"-version"}
		want = []string{"CoreDNS-", testCommit}
	default:
		t.Fatalf("no check for %s", bin)
	}
	out, err := exec.CommandContext(t.Context(), file, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("%s %s printed %q, want it to contain %q", bin, strings.Join(args, " "), out, w)
		}
	}
	t.Logf("%s %s: %s", bin, strings.Join(args, " "), strings.TrimSpace(string(out)))
}

// checkCharts packages both charts, pushes them with helm as make push
// does, pulls one back and compares it with what was pushed.
func checkCharts(t *testing.T, helm, repo, reg string) {
	home := t.TempDir()
	env := append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	run := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), helm, args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	packaged := t.TempDir()
	charts := []string{"xcc-dns-management", "xcc-dns-workload"}
	for _, c := range charts {
		run("package", filepath.Join(repo, "charts", c), "-d", packaged)
	}
	tgzs, err := filepath.Glob(filepath.Join(packaged, "*.tgz"))
	if err != nil || len(tgzs) != len(charts) {
		t.Fatalf("packaged %v (%v), want one archive per chart", tgzs, err)
	}
	for _, tgz := range tgzs {
		run("push", tgz, "oci://"+reg, "--plain-http")
	}

	// Pull the workload chart back by name and version.
	chart := "xcc-dns-workload"
	var tgz string
	for _, f := range tgzs {
		if strings.HasPrefix(filepath.Base(f), chart+"-") {
			tgz = f
		}
	}
	version := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(tgz), chart+"-"), ".tgz")
	pulled := t.TempDir()
	run("pull", "oci://"+reg+"/"+chart, "--version", version, "--plain-http", "-d", pulled)
	want, err := os.ReadFile(tgz)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(pulled, filepath.Base(tgz)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("chart pulled back differs from the one pushed (%d bytes, want %d)", len(got), len(want))
	}

	// The registry holds it as a helm chart artifact.
	ref, err := name.NewTag(reg + "/" + chart + ":" + version)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("reading %s: %v", ref, err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != helmChartConfig {
		t.Errorf("%s: config media type %s, want %s", ref, m.Config.MediaType, helmChartConfig)
	}
}

// testLog sends build and push progress to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func TestParsePlatforms(t *testing.T) {
	got, err := parsePlatforms("linux/amd64, linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, testPlatforms) {
		t.Errorf("got %v, want %v", got, testPlatforms)
	}
	for _, bad := range []string{"", "linux", "linux/", "/amd64", "linux/arm/v7", "linux/amd64,"} {
		if _, err := parsePlatforms(bad); err == nil {
			t.Errorf("parsePlatforms(%q) succeeded", bad)
		}
	}
}
