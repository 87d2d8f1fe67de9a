package compat

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/protocol"
)

// Every request and response captured between Apache controllers
// (TestCaptureApacheFrames) is decoded the way kraftd decodes frames and
// encoded again the way kraftd encodes them; the bytes must be identical, so
// that a peer decoding what kraftd writes reads exactly what Apache would
// have sent. No JVM is needed.
func TestApacheFrames(t *testing.T) {
	t.Parallel()
	reqs, err := filepath.Glob(filepath.Join(framesDir, "*", "*-request.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) == 0 {
		t.Fatalf("no frames under %s: run TestCaptureApacheFrames with -capture", framesDir)
	}
	versions := map[string]bool{}
	for _, reqPath := range reqs {
		version := filepath.Base(filepath.Dir(reqPath))
		versions[version] = true
		name := strings.TrimSuffix(filepath.Base(reqPath), "-request.bin")
		t.Run(version+"/"+name, func(t *testing.T) {
			reqFrame, err := os.ReadFile(reqPath)
			if err != nil {
				t.Fatal(err)
			}
			respFrame, err := os.ReadFile(strings.TrimSuffix(reqPath, "-request.bin") + "-response.bin")
			if err != nil {
				t.Fatal(err)
			}
			checkFramePair(t, name, reqFrame, respFrame)
		})
	}
	for _, v := range Versions {
		if !versions[v] {
			t.Errorf("no frames captured for Apache %s under %s", v, framesDir)
		}
	}
}

// checkFramePair checks one captured request and its response. name is the
// file stem, "<key>-<Name>-v<version>", which must agree with the header.
func checkFramePair(t *testing.T, name string, reqFrame, respFrame []byte) {
	h, body, err := protocol.ParseRequestHeader(reqFrame)
	if err != nil {
		t.Fatalf("request header: %v", err)
	}
	if want := fmt.Sprintf("%d-%s-v%d", h.Key, kmsg.NameForKey(h.Key), h.Version); want != name {
		t.Fatalf("header says %s, file is named %s", want, name)
	}
	req := kmsg.RequestForKey(h.Key)
	if req.MaxVersion() < h.Version {
		t.Fatalf("kmsg knows %s up to v%d, Apache sent v%d", kmsg.NameForKey(h.Key), req.MaxVersion(), h.Version)
	}
	req.SetVersion(h.Version)
	if err := req.ReadFrom(body); err != nil {
		t.Fatalf("decode %s v%d request: %v", kmsg.NameForKey(h.Key), h.Version, err)
	}
	got := protocol.AppendRequestHeader(nil, req, h.CorrelationID, h.ClientID)
	got = req.AppendTo(got)
	if d := firstDiff(got, reqFrame); d != "" {
		t.Errorf("request re-encoded differs from Apache's: %s", d)
	}

	corr, resp, err := protocol.ParseResponse(respFrame, req)
	if err != nil {
		t.Fatalf("response: %v", err)
	}
	if corr != h.CorrelationID {
		t.Errorf("response correlation id %d, request %d", corr, h.CorrelationID)
	}
	if code, ok := responseError(resp); ok && code != 0 {
		t.Logf("note: the captured response carries error code %d", code)
	}
	out := protocol.AppendResponse(nil, h, resp)[4:] // captures have no size prefix
	if d := firstDiff(out, respFrame); d != "" {
		t.Errorf("response re-encoded differs from Apache's: %s", d)
	}
}

// responseError returns the top-level error code of responses that have one.
func responseError(resp kmsg.Response) (int16, bool) {
	switch r := resp.(type) {
	case *kmsg.ApiVersionsResponse:
		return r.ErrorCode, true
	case *kmsg.FetchResponse:
		return r.ErrorCode, true
	case *kmsg.VoteResponse:
		return r.ErrorCode, true
	case *kmsg.BeginQuorumEpochResponse:
		return r.ErrorCode, true
	case *kmsg.EndQuorumEpochResponse:
		return r.ErrorCode, true
	case *kmsg.DescribeQuorumResponse:
		return r.ErrorCode, true
	case *kmsg.FetchSnapshotResponse:
		return r.ErrorCode, true
	}
	return 0, false
}

// firstDiff describes where got and want first differ ("" if equal), with the
// bytes around that offset, so a failure points at the field at fault.
func firstDiff(got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-8)
	window := func(b []byte) []byte { return b[min(lo, len(b)):min(i+16, len(b))] }
	return fmt.Sprintf("lengths %d (kraftd) and %d (Apache); first difference at offset %d:\n kraftd % x\n Apache % x\n (from offset %d)",
		len(got), len(want), i, window(got), window(want), lo)
}
