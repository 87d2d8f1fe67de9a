package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/internal/apachekafka"
)

// A release sets these with -ldflags "-X main.version=1.2.3 -X
// main.commit=<sha> -X main.date=<RFC 3339>"; a plain build leaves them
// empty and takes what the Go toolchain stamped into the binary.
var (
	version string
	commit  string
	date    string
)

// buildVersion is what the binary knows about its own build: the ldflags
// values first, else the module version and VCS stamps of debug.ReadBuildInfo.
type buildVersion struct {
	Version, Commit, Date string
	Modified              bool // built from a work tree with uncommitted changes
}

func readBuildVersion() buildVersion {
	v := buildVersion{Version: "devel"}
	if info, ok := debug.ReadBuildInfo(); ok {
		// `go install ...@v1.2.3` stamps the module version; a build in
		// the repository stamps "(devel)" and the VCS settings.
		if mv := info.Main.Version; mv != "" && mv != "(devel)" {
			v.Version = strings.TrimPrefix(mv, "v")
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.time":
				v.Date = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if version != "" {
		v.Version = strings.TrimPrefix(version, "v")
	}
	if commit != "" {
		v.Commit, v.Modified = commit, false
	}
	if date != "" {
		v.Date = date
	}
	return v
}

// versionText is what `kraftd version` and `kraftd --version` print.
func versionText() string {
	v := readBuildVersion()
	var b strings.Builder
	fmt.Fprintf(&b, "kraftd %s\n", v.Version)
	commit := orUnknown(v.Commit)
	if v.Modified {
		commit += " (modified)"
	}
	fmt.Fprintf(&b, "commit:             %s\n", commit)
	fmt.Fprintf(&b, "built:              %s\n", orUnknown(v.Date))
	fmt.Fprintf(&b, "go:                 %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "metadata.version:   %s to %s\n", controller.MetadataVersionName(controller.MinMetadataVersion),
		controller.MetadataVersionName(controller.LatestMetadataVersion))
	fmt.Fprintf(&b, "tested with Apache Kafka: %s\n", strings.Join(apachekafka.Versions(), ", "))
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version, commit, build date, Go version, metadata.version range and tested Apache Kafka releases",
		Action: func(*cli.Context) error {
			fmt.Print(versionText())
			return nil
		},
	}
}
