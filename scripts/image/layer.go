package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// appUID owns what kraftd writes; the same uid as the apache/kafka image's
// appuser, so a data volume moves between the two images as it is.
const appUID = 1000

const passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
	"appuser:x:1000:1000:kraftd:/var/lib/kafka:/sbin/nologin\n" +
	"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"

const group = "root:x:0:\nappuser:x:1000:\nnogroup:x:65534:\n"

// entry is one file or directory of the root file system.
type entry struct {
	path string
	mode int64
	uid  int
	body []byte // nil for a directory
}

// rootLayer is the whole file system, one gzip layer whose bytes depend
// only on its inputs: entries in a fixed order, one timestamp.
func rootLayer(bin, certs []byte, epoch time.Time) (v1.Layer, error) {
	entries := []entry{
		{path: "etc/", mode: 0o755},
		{path: "etc/passwd", mode: 0o644, body: []byte(passwd)},
		{path: "etc/group", mode: 0o644, body: []byte(group)},
		{path: "etc/ssl/", mode: 0o755},
		{path: "etc/ssl/certs/", mode: 0o755},
		{path: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, body: certs},
		{path: "etc/kafka/", mode: 0o755},
		{path: "etc/kafka/secrets/", mode: 0o755, uid: appUID},
		{path: "mnt/", mode: 0o755},
		{path: "mnt/shared/", mode: 0o755},
		{path: "mnt/shared/config/", mode: 0o755, uid: appUID},
		{path: "opt/", mode: 0o755},
		{path: "opt/kraftd/", mode: 0o755},
		{path: "opt/kraftd/config/", mode: 0o755, uid: appUID},
		{path: "tmp/", mode: 0o1777},
		{path: "usr/", mode: 0o755},
		{path: "usr/local/", mode: 0o755},
		{path: "usr/local/bin/", mode: 0o755},
		{path: "usr/local/bin/kraftd", mode: 0o755, body: bin},
		{path: "var/", mode: 0o755},
		{path: "var/lib/", mode: 0o755},
		{path: "var/lib/kafka/", mode: 0o755, uid: appUID},
		{path: "var/lib/kafka/data/", mode: 0o755, uid: appUID},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.path, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: epoch, Format: tar.FormatPAX}
		if e.body == nil {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// tarDir writes dir as a tar (an oci-archive when dir is an OCI layout),
// in name order with one timestamp, so that it is reproducible.
func tarDir(dir, out string, epoch time.Time) error {
	var paths []string
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && p != dir {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: epoch, Format: tar.FormatPAX}
		if info.IsDir() {
			h.Name, h.Typeflag, h.Mode = h.Name+"/", tar.TypeDir, 0o755
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			continue
		}
		h.Typeflag, h.Size = tar.TypeReg, info.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, src)
		src.Close()
		if err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
