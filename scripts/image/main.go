// Command image builds kraftd's OCI image without a container daemon: a
// from-scratch image per architecture holding the static kraftd binary,
// CA certificates, a passwd and group with the non-root user appuser
// (uid 1000, as in the apache/kafka image) and the directories the
// apache/kafka image's conventions name, joined in one image index and
// written as an OCI layout directory and, optionally, an oci-archive tar.
//
// It owns the image's layout and configuration only: it builds no Go code
// (the Makefile hands it binaries) and never talks to a registry or daemon.
// Every timestamp is -epoch, so the same binaries make the same digests.
//
//	go run ./scripts/image -bin linux/amd64=bin/image/kraftd-linux-amd64 \
//	    -bin linux/arm64=bin/image/kraftd-linux-arm64 -oci bin/image/oci -tar bin/image/kraftd-oci.tar -tag 0.1.0
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// binFlags is the repeated -bin os/arch=path flag.
type binFlags map[string]string

func (b binFlags) String() string { return fmt.Sprint(map[string]string(b)) }
func (b binFlags) Set(s string) error {
	platform, path, ok := strings.Cut(s, "=")
	if !ok || !strings.HasPrefix(platform, "linux/") {
		return fmt.Errorf("want linux/arch=path, got %q", s)
	}
	b[platform] = path
	return nil
}

type options struct {
	bins    binFlags
	caCerts string
	oci     string
	tar     string
	tag     string
	version string
	epoch   time.Time
}

func main() {
	o := options{bins: binFlags{}}
	flag.Var(o.bins, "bin", "a static kraftd for a platform, linux/arch=path (repeat per architecture)")
	flag.StringVar(&o.caCerts, "ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle the image carries")
	flag.StringVar(&o.oci, "oci", "bin/image/oci", "the OCI layout directory to write (replaced)")
	flag.StringVar(&o.tar, "tar", "", "also write the layout as this oci-archive tar")
	flag.StringVar(&o.tag, "tag", "latest", "the image's name in the layout (org.opencontainers.image.ref.name)")
	flag.StringVar(&o.version, "version", "dev", "org.opencontainers.image.version")
	epoch := flag.Int64("epoch", 0, "every timestamp in the image, in Unix seconds (SOURCE_DATE_EPOCH)")
	flag.Parse()
	o.epoch = time.Unix(*epoch, 0).UTC()
	if err := build(o); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(o options) error {
	if len(o.bins) == 0 {
		return fmt.Errorf("no -bin given")
	}
	certs, err := os.ReadFile(o.caCerts)
	if err != nil {
		return fmt.Errorf("CA certificates: %w", err)
	}
	platforms := make([]string, 0, len(o.bins))
	for p := range o.bins {
		platforms = append(platforms, p)
	}
	sort.Strings(platforms)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		bin, err := os.ReadFile(o.bins[p])
		if err != nil {
			return err
		}
		img, err := platformImage(o, bin, certs)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		arch := strings.TrimPrefix(p, "linux/")
		plat := &v1.Platform{OS: "linux", Architecture: arch}
		if arch == "arm64" {
			plat.Variant = "v8"
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
	}
	if err := os.RemoveAll(o.oci); err != nil {
		return err
	}
	lp, err := layout.Write(o.oci, empty.Index)
	if err != nil {
		return err
	}
	ref := layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": o.tag})
	if err := lp.AppendIndex(idx, ref); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("image: %s %s (%s) in %s\n", o.tag, digest, strings.Join(platforms, ", "), o.oci)
	if o.tar != "" {
		if err := tarDir(o.oci, o.tar, o.epoch); err != nil {
			return err
		}
		fmt.Printf("image: oci-archive %s\n", o.tar)
	}
	return nil
}

// platformImage is one architecture's image: one layer, its config.
func platformImage(o options, bin, certs []byte) (v1.Image, error) {
	layer, err := rootLayer(bin, certs, o.epoch)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: o.epoch}, CreatedBy: "kraftd scripts/image", Comment: "kraftd " + o.version}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: o.epoch}
	cf.Config = v1.Config{
		User:       "1000:1000", // numeric, so that runAsNonRoot can check it
		Entrypoint: []string{"/usr/local/bin/kraftd", "image"},
		Env:        []string{"PATH=/usr/local/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		WorkingDir: "/var/lib/kafka",
		StopSignal: "SIGTERM",
		// 9093: the CONTROLLER listener Apache's examples use; 9404: the
		// default kraftd.metrics.listener of the image's configuration.
		ExposedPorts: map[string]struct{}{"9093/tcp": {}, "9404/tcp": {}},
		Volumes:      map[string]struct{}{"/var/lib/kafka/data": {}, "/mnt/shared/config": {}, "/etc/kafka/secrets": {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":    "kraftd",
			"org.opencontainers.image.version":  o.version,
			"org.opencontainers.image.created":  o.epoch.Format(time.RFC3339),
			"org.opencontainers.image.licenses": "Apache-2.0",
		},
	}
	return mutate.ConfigFile(img, cf)
}
