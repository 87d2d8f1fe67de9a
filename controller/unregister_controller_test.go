package controller

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// UnregisterController removes a registered non-voter at 4.4-IV2 and
// refuses a voter, an unknown id, and older metadata versions.
func TestUnregisterController(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		mv       int16
		id       int32
		voter    bool
		register bool
		want     int16
	}{
		{LatestMetadataVersion, 3000, false, true, 0},
		{LatestMetadataVersion, 3000, true, true, kerr.InvalidRequest.Code},
		{LatestMetadataVersion, 3000, false, false, kerr.ControllerIDNotRegistered.Code},
		{32, 3000, false, true, kerr.UnsupportedVersion.Code},
		// The active controller itself: refused before any other check,
		// whatever the metadata.version, voter or not, registered or not.
		{LatestMetadataVersion, selfID, true, true, kerr.InvalidRequest.Code},
		{LatestMetadataVersion, selfID, false, false, kerr.InvalidRequest.Code},
		{32, selfID, false, false, kerr.InvalidRequest.Code},
	} {
		c, _, _ := newTestController(t, tc.mv)
		if tc.register {
			reg := kmsg.NewPtrControllerRegistrationRequest()
			reg.ControllerID, reg.IncarnationID = tc.id, [16]byte{1}
			if err := c.RegisterController(ctx, reg); err != nil {
				t.Fatal(err)
			}
		}
		err := c.UnregisterController(ctx, tc.id, func(id int32) bool { return tc.voter && id == tc.id })
		if got := code(err); got != tc.want {
			t.Errorf("%+v: code %d (%v)", tc, got, err)
		}
		if _, msg := ErrorCode(err); tc.id == selfID && (msg == nil || *msg != "Controller cannot unregister itself while it is active.") {
			t.Errorf("%+v: the active controller itself: %v", tc, err)
		}
		_, still := c.image.Controllers[tc.id]
		if still != (tc.register && tc.want != 0) {
			t.Errorf("%+v: registration left=%v", tc, still)
		}
	}
}

// selfID is the node id newTestController's controller runs as.
const selfID int32 = 1
