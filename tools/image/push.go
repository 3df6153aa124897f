package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/docker/cli/cli/config"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

type pushOptions struct {
	Layouts  string // directory holding one OCI layout per binary
	Registry string // e.g. registry.example.com/xcc-dns
	Tag      string
	Insecure bool
	Binaries []string
	Log      io.Writer // nil: stderr
}

// push uploads the image index of each binary's layout to
// <registry>/<binary>:<tag>.
func push(ctx context.Context, o pushOptions) error {
	if o.Log == nil {
		o.Log = os.Stderr
	}
	if o.Registry == "" || o.Tag == "" {
		return errors.New("-registry and -tag are required")
	}
	if len(o.Binaries) == 0 {
		return fmt.Errorf("no binaries named; choose from %s", strings.Join(binaryNames(), ", "))
	}
	var nameOpts []name.Option
	if o.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	keychain := authn.NewMultiKeychain(authn.DefaultKeychain, helmKeychain{})
	for _, bin := range o.Binaries {
		idx, err := layoutIndex(filepath.Join(o.Layouts, bin), o.Tag)
		if err != nil {
			return fmt.Errorf("%s: %w", bin, err)
		}
		ref, err := name.NewTag(strings.TrimSuffix(o.Registry, "/")+"/"+bin+":"+o.Tag, nameOpts...)
		if err != nil {
			return fmt.Errorf("%s: image reference: %w", bin, err)
		}
		if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(keychain)); err != nil {
			return fmt.Errorf("pushing %s: %w", ref, err)
		}
		digest, err := idx.Digest()
		if err != nil {
			return fmt.Errorf("%s: %w", bin, err)
		}
		fmt.Fprintf(o.Log, ">> pushed %s@%s\n", ref, digest)
	}
	return nil
}

// layoutIndex reads the image index build wrote into the OCI layout dir
// and checks it was built for tag, so a pushed tag always names images
// stamped with that version.
func layoutIndex(dir, tag string) (v1.ImageIndex, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the OCI layout (run make images): %w", err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() {
		return nil, fmt.Errorf("%s: want exactly one image index, as image build writes", dir)
	}
	d := m.Manifests[0]
	if built := d.Annotations[refNameAnnotation]; built != tag {
		return nil, fmt.Errorf("%s was built as version %q, not %q: rebuild it", dir, built, tag)
	}
	return top.ImageIndex(d.Digest)
}

// helmKeychain reads the credentials `helm registry login` stored, so one
// login serves the charts and the images. It comes after the Docker and
// Podman files of authn.DefaultKeychain.
type helmKeychain struct{}

func (helmKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	f, err := os.Open(helmRegistryConfig())
	if errors.Is(err, os.ErrNotExist) {
		return authn.Anonymous, nil
	}
	if err != nil {
		return nil, fmt.Errorf("helm registry config: %w", err)
	}
	defer f.Close()
	cf, err := config.LoadFromReader(f)
	if err != nil {
		return nil, fmt.Errorf("helm registry config %s: %w", f.Name(), err)
	}
	ac, err := cf.GetAuthConfig(r.RegistryStr())
	if err != nil {
		return nil, fmt.Errorf("helm registry credentials for %s: %w", r.RegistryStr(), err)
	}
	if ac.Username == "" && ac.Password == "" && ac.Auth == "" && ac.IdentityToken == "" && ac.RegistryToken == "" {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(authn.AuthConfig{
		Username:      ac.Username,
		Password:      ac.Password,
		Auth:          ac.Auth,
		IdentityToken: ac.IdentityToken,
		RegistryToken: ac.RegistryToken,
	}), nil
}

// helmRegistryConfig is where helm keeps registry credentials:
// $HELM_REGISTRY_CONFIG, else registry/config.json in helm's config home.
func helmRegistryConfig() string {
	if p := os.Getenv("HELM_REGISTRY_CONFIG"); p != "" {
		return p
	}
	dir := os.Getenv("HELM_CONFIG_HOME")
	if dir == "" {
		if base, err := os.UserConfigDir(); err == nil {
			dir = filepath.Join(base, "helm")
		}
	}
	return filepath.Join(dir, "registry", "config.json")
}
