package apachekafka

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mavenCentral is where `make kafka` fetches the jars from (Maven's
// default repository, kit/pom.xml).
const mavenCentral = "https://repo1.maven.org/maven2/org/apache/kafka"

// Each pinned release is the newest patch of its line that Maven Central
// serves, and Shell says truly whether its kafka-shell jar is served. The
// registry is the truth here: a pin that falls behind a new patch fails
// this test rather than leaving the suite proving an old one.
func TestPinnedAreTheNewestServedPatches(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	body, err := get(ctx, mavenCentral+"/kafka_2.13/maven-metadata.xml")
	if err != nil {
		t.Fatalf("reading the versions Maven Central serves (make kafka needs it too): %v", err)
	}
	var meta struct {
		Versions []string `xml:"versioning>versions>version"`
	}
	if err := xml.Unmarshal(body, &meta); err != nil {
		t.Fatal(err)
	}
	newest := map[string]string{} // line -> newest patch served
	for _, v := range meta.Versions {
		line, err := Line(v)
		if err != nil {
			continue // another line, or a pre-release
		}
		if cur, ok := newest[line]; !ok || patch(v) > patch(cur) {
			newest[line] = v
		}
	}
	for _, r := range Pinned {
		line, _ := Line(r.Version)
		if newest[line] != r.Version {
			t.Errorf("pinned %s, but the newest patch of %s that Maven Central serves is %s", r.Version, line, newest[line])
		}
		url := fmt.Sprintf("%s/kafka-shell/%s/kafka-shell-%s.jar", mavenCentral, r.Version, r.Version)
		served, err := head(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		if served != r.Shell {
			t.Errorf("%s: Shell is %v, but Maven Central serves kafka-shell: %v", r.Version, r.Shell, served)
		}
	}
}

func patch(version string) int {
	n, _ := strconv.Atoi(version[strings.LastIndexByte(version, '.')+1:])
	return n
}

func get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}

// head reports whether url is served (200) or not (404).
func head(ctx context.Context, url string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	}
	return false, fmt.Errorf("HEAD %s: %s", url, resp.Status)
}
