package compat

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// KraftdBinary returns the path of bin/kraftd (built by `make build`), or
// fails the test saying to build it.
func KraftdBinary(t testing.TB) string {
	t.Helper()
	return repoBinary(t, "kraftd", "make build")
}

// KraftdRaceBinary returns the path of bin/kraftd-race, kraftd built with
// the race detector (`make build-race`, part of `make test`): a process
// that hits a data race prints "WARNING: DATA RACE".
func KraftdRaceBinary(t testing.TB) string {
	t.Helper()
	return repoBinary(t, "kraftd-race", "make build-race")
}

func repoBinary(t testing.TB, name, how string) string {
	t.Helper()
	bin := filepath.Join(RepoRoot(t), "bin", name)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: run `%s` (%v)", bin, how, err)
	}
	return bin
}

// StartKraftd starts bin/kraftd with args (e.g. "start", "--config", path)
// as a Process named name, stopped by PID at the end of the test.
// Configuration files can be written with FormatProperties and the same
// server.properties keys as Apache's (ApacheNode.Props is a model).
func StartKraftd(t testing.TB, name string, args ...string) *Process {
	t.Helper()
	return StartProcess(t, name, append([]string{KraftdBinary(t)}, args...)...)
}

// WriteKraftdConfig writes the properties of kraftd controller id, with one
// CONTROLLER listener at addr and its metadata log in dir, to
// kraftd.properties beside dir, and returns that file's path. extra adds
// the voters or bootstrap servers and overrides anything.
func WriteKraftdConfig(t testing.TB, id int32, addr, dir string, extra map[string]string) string {
	t.Helper()
	props := map[string]string{
		"process.roles":             "controller",
		"node.id":                   fmt.Sprint(id),
		"controller.listener.names": "CONTROLLER",
		"listeners":                 "CONTROLLER://" + addr,
		"metadata.log.dir":          dir,
	}
	maps.Copy(props, extra)
	conf := filepath.Join(filepath.Dir(dir), "kraftd.properties")
	writeFile(t, conf, []byte(FormatProperties(props)))
	return conf
}
