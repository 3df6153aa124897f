package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	defaultSource = "https://github.com/xcc-dns/xcc-dns"
	versionPkg    = "github.com/xcc-dns/xcc-dns/internal/version"

	// binDir holds the binary in every image and is the image's PATH.
	binDir = "/usr/local/bin"
	// nonRootUser is the image's user: distroless's "nonroot", the uid the
	// charts' pods run as. Numeric, so the kubelet can verify runAsNonRoot
	// without an /etc/passwd in the image.
	nonRootUser = "65532:65532"

	// OCI annotation and label keys.
	labelTitle    = "org.opencontainers.image.title"
	labelVersion  = "org.opencontainers.image.version"
	labelRevision = "org.opencontainers.image.revision"
	labelSource   = "org.opencontainers.image.source"
	// refNameAnnotation tags the image index inside the OCI layout.
	refNameAnnotation = "org.opencontainers.image.ref.name"
)

// binary is one image: the main package built into it and the extra
// string variables that receive the commit.
type binary struct {
	pkg        string
	commitVars []string
}

var binaries = map[string]binary{
	"xcc-syncer": {pkg: "./cmd/xcc-syncer"},
	// CoreDNS's -version prints its own release; GitCommit names ours.
	"coredns": {pkg: "./cmd/coredns", commitVars: []string{"github.com/coredns/coredns/coremain.GitCommit"}},
}

func binaryNames() []string {
	names := make([]string, 0, len(binaries))
	for n := range binaries {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

type buildOptions struct {
	Src       string        // root of the main module
	Out       string        // one OCI layout per binary is written to Out/<binary>
	Version   string        // the charts' appVersion
	Commit    string        // git commit, "-dirty" when the tree had changes
	Source    string        // org.opencontainers.image.source
	Platforms []v1.Platform // one image per platform in each index
	Binaries  []string
	Log       io.Writer // progress lines; nil: stderr
}

// built is what build wrote for one binary.
type built struct {
	Name   string
	Layout string // directory of the OCI layout
	Index  v1.ImageIndex
}

// build cross-compiles every binary for every platform and writes one OCI
// image layout per binary under o.Out, holding an image index tagged
// o.Version.
func build(ctx context.Context, o buildOptions) ([]built, error) {
	if o.Log == nil {
		o.Log = os.Stderr
	}
	if o.Version == "" || o.Commit == "" {
		return nil, errors.New("-version and -commit are required")
	}
	if len(o.Platforms) == 0 {
		return nil, errors.New("no platforms")
	}
	if len(o.Binaries) == 0 {
		return nil, fmt.Errorf("no binaries named; choose from %s", strings.Join(binaryNames(), ", "))
	}
	src, err := filepath.Abs(o.Src)
	if err != nil {
		return nil, fmt.Errorf("resolving -src: %w", err)
	}
	created, err := buildTime()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "xcc-dns-image-")
	if err != nil {
		return nil, fmt.Errorf("creating a build directory: %w", err)
	}
	defer os.RemoveAll(work)

	var out []built
	for _, name := range o.Binaries {
		b, ok := binaries[name]
		if !ok {
			return nil, fmt.Errorf("unknown binary %q; choose from %s", name, strings.Join(binaryNames(), ", "))
		}
		labels := map[string]string{
			labelTitle:    name,
			labelVersion:  o.Version,
			labelRevision: o.Commit,
			labelSource:   o.Source,
		}
		var adds []mutate.IndexAddendum
		for _, p := range o.Platforms {
			start := time.Now()
			exe := filepath.Join(work, name+"-"+p.OS+"-"+p.Architecture)
			if err := goBuild(ctx, src, b, p, o.Version, o.Commit, exe); err != nil {
				return nil, err
			}
			img, err := binaryImage(name, exe, p, labels, created)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", name, p, err)
			}
			size, err := layerSize(img)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", name, p, err)
			}
			fmt.Fprintf(o.Log, ">> %s %s: %.1f MiB compressed, %s\n", name, p, float64(size)/(1<<20), time.Since(start).Round(100*time.Millisecond))
			adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
		}
		idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
		idx, ok = mutate.Annotations(idx, labels).(v1.ImageIndex)
		if !ok {
			return nil, errors.New("annotating the image index did not return an index")
		}
		dir := filepath.Join(o.Out, name)
		if err := writeLayout(dir, idx, o.Version); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		digest, err := idx.Digest()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(o.Log, ">> %s:%s %s in %s\n", name, o.Version, digest, dir)
		out = append(out, built{Name: name, Layout: dir, Index: idx})
	}
	return out, nil
}

// goBuild builds one static binary: no cgo, so it needs no libc in the
// image; -trimpath and -s -w, so it holds no build paths or symbol tables.
func goBuild(ctx context.Context, src string, b binary, p v1.Platform, version, commit, exe string) error {
	ldflags := []string{"-s", "-w",
		"-X", versionPkg + ".Version=" + version,
		"-X", versionPkg + ".Commit=" + commit,
	}
	for _, v := range b.commitVars {
		ldflags = append(ldflags, "-X", v+"="+commit)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", strings.Join(ldflags, " "), "-o", exe, b.pkg)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s for %s: %w\n%s", b.pkg, p, err, out)
	}
	return nil
}

// binaryImage is the binary as the only layer on an empty base: nothing to
// pull, nothing but the binary to patch.
func binaryImage(name, exe string, p v1.Platform, labels map[string]string, created time.Time) (v1.Image, error) {
	layer, err := binaryLayer(exe, path.Join(binDir, name), created)
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.ConfigFile(base, &v1.ConfigFile{
		Architecture: p.Architecture,
		OS:           p.OS,
		Created:      v1.Time{Time: created},
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Entrypoint: []string{path.Join(binDir, name)},
			Env:        []string{"PATH=" + binDir},
			User:       nonRootUser,
			WorkingDir: "/",
			Labels:     labels,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("setting the config: %w", err)
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "xcc-dns tools/image: " + binaries[name].pkg},
	})
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	return img, nil
}

// binaryLayer is a gzipped tar of the binary at file (an absolute path in
// the image) and its parent directories, owned by root and not writable by
// the image's user. Fixed times and owners make the layer depend on the
// binary alone.
func binaryLayer(exe, file string, mtime time.Time) (v1.Layer, error) {
	bin, err := os.ReadFile(exe)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	rel := strings.TrimPrefix(file, "/")
	var dirs []string
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		dirs = append([]string{d + "/"}, dirs...)
	}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: mtime}); err != nil {
			return nil, fmt.Errorf("writing the layer: %w", err)
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: 0o755, Size: int64(len(bin)), ModTime: mtime}); err != nil {
		return nil, fmt.Errorf("writing the layer: %w", err)
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, fmt.Errorf("writing the layer: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("writing the layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing the layer: %w", err)
	}
	// Compressed once here; the opener hands out the same bytes for the
	// digest, the layout and every push.
	compressed := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

func layerSize(img v1.Image) (int64, error) {
	layers, err := img.Layers()
	if err != nil {
		return 0, err
	}
	var total int64
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// writeLayout replaces dir with an OCI image layout whose index.json names
// one image index, tagged version.
func writeLayout(dir string, idx v1.ImageIndex, version string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the old layout: %w", err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("creating the layout: %w", err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refNameAnnotation: version})); err != nil {
		return fmt.Errorf("writing the layout: %w", err)
	}
	return nil
}

// buildTime is the time recorded in the layers and configs: the Unix epoch,
// or SOURCE_DATE_EPOCH when set, so the same binaries give the same digests.
func buildTime() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// parsePlatforms reads "linux/amd64,linux/arm64". Variants (arm/v7) are not
// supported: the binaries are built for amd64 and arm64 only.
func parsePlatforms(s string) ([]v1.Platform, error) {
	var ps []v1.Platform
	for _, f := range strings.Split(s, ",") {
		osName, arch, ok := strings.Cut(strings.TrimSpace(f), "/")
		if !ok || osName == "" || arch == "" || strings.Contains(arch, "/") {
			return nil, fmt.Errorf("platform %q: want os/arch", f)
		}
		ps = append(ps, v1.Platform{OS: osName, Architecture: arch})
	}
	return ps, nil
}
