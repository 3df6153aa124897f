// Command mcsimages builds, from this machine's Debian packages, the two
// images the upstream MCS conformance suite (conformance/ of
// kubernetes-sigs/mcs-api) names, under the names it uses, as OCI image
// archives the node lab imports with -image (see e2e/README.md, "Running
// an MCS conformance suite against it"). The node lab reaches no registry,
// so the public images cannot be pulled; these stand-ins hold what the
// suite runs in them and nothing else:
//
//   - docker.io/alpine/socat:1.7.4.4, the exported "hello" pods: a shell
//     script (sh, echo, grep -E, tr, awk) starting socat on TCP or UDP
//     port 42, whose SYSTEM: address runs /bin/sh;
//   - docker.io/nicolaka/netshoot:v0.15, the request pods: a shell loop,
//     and the suite's exec'd "sh -c" commands with nslookup (BIND's: the
//     suite parses its output), nc (OpenBSD's, with -4/-6, -v, -w), grep,
//     awk and tail.
//
// Each image is dash as /bin/sh, busybox (static) for the text tools, one
// applet link per name, plus the packages' binaries and the shared
// libraries ldd names for them, at the paths ldd gives. Debian's static
// busybox is built to run its own applets before any program in PATH, so
// its sh would run busybox's nslookup and nc, whose output and flags are
// not what the suite expects: dash runs what PATH names.
// `make mcs-conformance-images` installs the packages with apt-get and
// runs this command.
package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// binary is a program of the host to copy into an image.
type binary struct {
	name string // looked up in PATH
	pkg  string // the Debian package that installs it, for the error
	dest string // path in the image
}

type image struct {
	ref      string
	archive  string
	binaries []binary
	cfg      lab.ImageConfig
}

// pathEnv is PATH in both images, as in their upstream Alpine bases: the
// CRI runtime sets none for an image that does not, and the suite execs
// "sh" by name.
const pathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

var busybox = binary{name: "busybox", pkg: "busybox-static", dest: "/bin/busybox"}

// common are in both images.
var common = []binary{
	busybox,
	{name: "dash", pkg: "dash", dest: "/bin/sh"},
}

var images = []image{
	{
		ref:     "docker.io/alpine/socat:1.7.4.4",
		archive: "alpine-socat.tar",
		binaries: []binary{
			{name: "socat", pkg: "socat", dest: "/usr/bin/socat"},
		},
		// As upstream: the suite's pods give a command of their own.
		cfg: lab.ImageConfig{Entrypoint: []string{"socat"}, Env: []string{pathEnv}},
	},
	{
		ref:     "docker.io/nicolaka/netshoot:v0.15",
		archive: "nicolaka-netshoot.tar",
		binaries: []binary{
			{name: "nslookup", pkg: "bind9-dnsutils", dest: "/usr/bin/nslookup"},
			{name: "dig", pkg: "bind9-dnsutils", dest: "/usr/bin/dig"},
			{name: "host", pkg: "bind9-dnsutils", dest: "/usr/bin/host"},
			{name: "nc.openbsd", pkg: "netcat-openbsd", dest: "/usr/bin/nc"},
		},
		// No entrypoint, as upstream: the request pod gives only args
		// ("/bin/sh -ec ..."), which replace Cmd. Upstream's Cmd is zsh,
		// which this image lacks.
		cfg: lab.ImageConfig{Cmd: []string{"/bin/sh"}, Env: []string{pathEnv}},
	},
}

// etcFiles are written into both images: root's account (tools that look
// up the user find one) and the usual name service order.
var etcFiles = map[string]string{
	"etc/passwd":        "root:x:0:0:root:/root:/bin/sh\n",
	"etc/group":         "root:x:0:\n",
	"etc/nsswitch.conf": "hosts: files dns\n",
}

func main() {
	out := flag.String("out", "", "directory to write the image archives to (created if missing)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: mcsimages -out <dir>")
		os.Exit(2)
	}
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "mcsimages:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	applets, err := busyboxApplets()
	if err != nil {
		return err
	}
	var flags []string
	for _, img := range images {
		archive := filepath.Join(out, img.archive)
		if err := build(img, applets, archive); err != nil {
			return fmt.Errorf("image %s: %w", img.ref, err)
		}
		fmt.Printf(">> wrote %s (%s)\n", archive, img.ref)
		flags = append(flags, "-image "+archive)
	}
	fmt.Printf(">> for the node lab: make node-lab NODE_LAB_FLAGS=\"%s -clusterset conformance\"\n", strings.Join(flags, " "))
	return nil
}

// build assembles img's file tree in a temporary directory and writes it
// as the archive.
func build(img image, applets []string, archive string) error {
	root, err := os.MkdirTemp("", "mcsimage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	for _, d := range []string{"etc", "root", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	// Mkdir's mode is filtered by the umask: set /tmp's explicitly.
	if err := os.Chmod(filepath.Join(root, "tmp"), 0o777|os.ModeSticky); err != nil {
		return err
	}
	for name, content := range etcFiles {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	has := map[string]bool{}
	for _, b := range append(slices.Clone(common), img.binaries...) {
		if err := addBinary(root, b); err != nil {
			return err
		}
		has[path.Base(b.dest)] = true
	}
	// Busybox's applets, except where a package gives the program (sh;
	// busybox's own nslookup and nc print and accept other things).
	for _, a := range applets {
		if has[path.Base(a)] {
			continue
		}
		p := filepath.Join(root, a)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(busybox.dest, p); err != nil {
			return fmt.Errorf("busybox applet %s: %w", a, err)
		}
	}
	return lab.WriteDirImage(root, img.ref, img.cfg, archive)
}

// addBinary copies b from the host into root at b.dest and, when it is
// dynamically linked, every shared library ldd resolves for it (and its
// program interpreter) at the host's path.
func addBinary(root string, b binary) error {
	src, err := exec.LookPath(b.name)
	if err != nil {
		return fmt.Errorf("%s (Debian package %s; make mcs-conformance-images installs it): %w", b.name, b.pkg, err)
	}
	if err := copyFile(src, filepath.Join(root, b.dest)); err != nil {
		return err
	}
	libs, err := sharedLibraries(src)
	if err != nil {
		return err
	}
	for _, lib := range libs {
		if err := copyFile(lib, filepath.Join(root, lib)); err != nil {
			return err
		}
	}
	return nil
}

// sharedLibraries returns the absolute paths ldd prints for exe, none
// for a static binary (ldd fails on those, so the ELF header decides).
func sharedLibraries(exe string) ([]string, error) {
	f, err := elf.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("read ELF %s: %w", exe, err)
	}
	dynamic := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			dynamic = true
		}
	}
	f.Close()
	if !dynamic {
		return nil, nil
	}
	cmd := exec.Command("ldd", exe)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w: %s", exe, err, stderr.Bytes())
	}
	return parseLdd(stdout)
}

// parseLdd reads ldd's lines: "libc.so.6 => /lib/.../libc.so.6 (0x...)",
// "/lib64/ld-linux-x86-64.so.2 (0x...)" (the interpreter) and
// "linux-vdso.so.1 (0x...)" (the kernel's, no file).
func parseLdd(out []byte) ([]string, error) {
	var libs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if _, after, ok := strings.Cut(line, "=>"); ok {
			line = strings.TrimSpace(after)
		}
		if strings.HasPrefix(line, "not found") {
			return nil, fmt.Errorf("ldd: a library is not found: %s", sc.Text())
		}
		if p, _, _ := strings.Cut(line, " "); strings.HasPrefix(p, "/") {
			libs = append(libs, p)
		}
	}
	if len(libs) == 0 {
		return nil, errors.New("ldd named no library")
	}
	return libs, sc.Err()
}

// copyFile copies src (following symbolic links) to dst, executable.
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		return err
	}
	// WriteFile's mode is filtered by the umask.
	return os.Chmod(dst, 0o755)
}

// busyboxApplets lists the applets of the host's busybox as paths without
// the leading slash ("bin/sh", "usr/bin/awk").
func busyboxApplets() ([]string, error) {
	exe, err := exec.LookPath(busybox.name)
	if err != nil {
		return nil, fmt.Errorf("busybox (Debian package %s): %w", busybox.pkg, err)
	}
	out, err := exec.Command(exe, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list-full: %w", exe, err)
	}
	applets := strings.Fields(string(out))
	if len(applets) == 0 {
		return nil, fmt.Errorf("%s --list-full listed no applet", exe)
	}
	return applets, nil
}
