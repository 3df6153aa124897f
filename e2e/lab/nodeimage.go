package lab

import (
	"archive/tar"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// The node lab builds every image it runs: no registry is reachable.
// An image here is one static binary on an empty base (WriteBinaryImage)
// or a directory tree (WriteDirImage), written as an OCI image archive (an
// OCI image layout in a tar) that `ctr images import` reads.

// BuildStaticBinary builds pkg (a package path of the e2e module, or any
// package the e2e module requires) into out as a static binary.
func BuildStaticBinary(ctx context.Context, e2eDir, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = e2eDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// WriteBinaryImage writes an OCI image archive to out holding one image
// named ref (a full reference, e.g. registry.k8s.io/pause:3.10.2): exe as
// /<name> of an otherwise empty file system, entrypoint /<name> followed
// by args, run as user. netBindService gives the binary the file
// capability cap_net_bind_service (+ep), as upstream CoreDNS's image does,
// so that it binds port 53 as a user other than root.
func WriteBinaryImage(exe, ref, user string, args []string, netBindService bool, out string) error {
	bin, err := os.ReadFile(exe)
	if err != nil {
		return fmt.Errorf("read %s: %w", exe, err)
	}
	name := filepath.Base(exe)
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	for _, d := range []string{"etc/", "tmp/"} {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode}); err != nil {
			return err
		}
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: int64(len(bin)), Format: tar.FormatPAX}
	if netBindService {
		// struct vfs_cap_data, revision 2, effective: permitted bit 10
		// (CAP_NET_BIND_SERVICE), little-endian.
		capData := []byte{0x01, 0, 0, 0x02, 0, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		hdr.PAXRecords = map[string]string{"SCHILY.xattr.security.capability": string(capData)}
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := tw.Write(bin); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return writeImageArchive(layerTar.Bytes(), ref, ImageConfig{
		Entrypoint: append([]string{"/" + name}, args...),
		User:       user,
	}, out)
}

// ImageConfig is what an image built here says about how to run it: the
// fields of the OCI image config's "config" that the node lab's images
// set. Empty fields are left out, so that a pod's command and args
// replace them as they replace a public image's.
type ImageConfig struct {
	Entrypoint []string
	Cmd        []string
	Env        []string
	User       string
	// WorkingDir is "/" when empty.
	WorkingDir string
}

// WriteDirImage writes an OCI image archive to out holding one image
// named ref (a full reference, e.g. docker.io/alpine/socat:1.7.4.4) whose
// one layer is the directory tree dir: its directories, regular files and
// symbolic links with their modes, owned by root, with a fixed time, so
// that the same tree gives the same image. It lets a test suite's images
// be built from files on this machine (for example binaries from Debian
// packages and their shared libraries) when the registry that serves them
// cannot be reached.
func WriteDirImage(dir, ref string, cfg ImageConfig, out string) error {
	layer, err := dirLayer(dir)
	if err != nil {
		return fmt.Errorf("image %s from %s: %w", ref, dir, err)
	}
	if err := writeImageArchive(layer, ref, cfg, out); err != nil {
		return fmt.Errorf("image %s: %w", ref, err)
	}
	return nil
}

// dirLayer returns the uncompressed layer tar of the tree dir, in lexical
// order. Other file types (devices, sockets) are refused: a container
// gets its /dev from the runtime.
func dirLayer(dir string) ([]byte, error) {
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: int64(info.Mode().Perm()), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if info.Mode()&fs.ModeSticky != 0 {
			hdr.Mode |= 0o1000
		}
		switch {
		case info.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		case info.Mode()&fs.ModeSymlink != 0:
			hdr.Typeflag, hdr.Mode = tar.TypeSymlink, 0o777
			if hdr.Linkname, err = os.Readlink(p); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
		default:
			return fmt.Errorf("%s: neither a directory, a regular file nor a symbolic link", p)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := io.Copy(tw, f); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return layerTar.Bytes(), nil
}

// writeImageArchive writes the OCI image archive of one image, ref, of
// the one uncompressed layer layerTar and the config cfg.
func writeImageArchive(layerTar []byte, ref string, cfg ImageConfig, out string) error {
	diffID := sha256.Sum256(layerTar)
	var layer bytes.Buffer
	zw := gzip.NewWriter(&layer)
	if _, err := zw.Write(layerTar); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	runConfig := map[string]any{"WorkingDir": cmp.Or(cfg.WorkingDir, "/")}
	if len(cfg.Entrypoint) > 0 {
		runConfig["Entrypoint"] = cfg.Entrypoint
	}
	if len(cfg.Cmd) > 0 {
		runConfig["Cmd"] = cfg.Cmd
	}
	if len(cfg.Env) > 0 {
		runConfig["Env"] = cfg.Env
	}
	if cfg.User != "" {
		runConfig["User"] = cfg.User
	}
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config":       runConfig,
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diffID[:])}},
	})
	if err != nil {
		return err
	}
	blobs := map[string][]byte{}
	desc := func(mediaType string, b []byte) ociDescriptor {
		sum := sha256.Sum256(b)
		d := "sha256:" + hex.EncodeToString(sum[:])
		blobs[d] = b
		return ociDescriptor{MediaType: mediaType, Digest: d, Size: int64(len(b))}
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        desc("application/vnd.oci.image.config.v1+json", config),
		"layers":        []ociDescriptor{desc("application/vnd.oci.image.layer.v1.tar+gzip", layer.Bytes())},
	})
	if err != nil {
		return err
	}
	md := desc("application/vnd.oci.image.manifest.v1+json", manifest)
	md.Annotations = map[string]string{
		"io.containerd.image.name":          ref,
		"org.opencontainers.image.ref.name": ref[strings.LastIndex(ref, ":")+1:],
	}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []ociDescriptor{md}})
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"oci-layout": []byte(`{"imageLayoutVersion":"1.0.0"}`),
		"index.json": index,
	}
	for d, b := range blobs {
		files["blobs/sha256/"+strings.TrimPrefix(d, "sha256:")] = b
	}
	return writeTar(out, files)
}

func writeTar(out string, files map[string][]byte) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755}); err != nil {
			f.Close()
			return err
		}
	}
	for name, b := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(b))}); err != nil {
			f.Close()
			return err
		}
		if _, err := tw.Write(b); err != nil {
			f.Close()
			return err
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// TarLayout writes the OCI image layout in dir (as `make images` writes
// them) as an OCI image archive to out.
func TarLayout(dir, out string) error {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		return fmt.Errorf("read layout %s: %w", dir, err)
	}
	return writeTar(out, files)
}
