package controller

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kraftd/kraftd/metadata"
)

// UnregisterController removes the registration of a controller that is no
// longer a voter (UnregisterController, key 94, KIP-1312, from
// metadata.version 4.4-IV2), as Apache's QuorumController and
// ClusterControlManager.unregisterController do: a voter may not be
// unregistered, nor a controller that is not registered. The active
// controller's own id is refused first, in Apache's words (its
// QuorumController checks nothing before it); Apache has no voter check
// at all, kraftd keeps one for the other voters, so that a voter stays
// counted. isVoter answers from the quorum's current voter set, which the
// controller does not hold.
func (c *Core) UnregisterController(now time.Time, id int32, isVoter func(int32) bool, answer func(error)) {
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		if id == c.settings.NodeID {
			return nil, apiErr(kerr.InvalidRequest.Code, "Controller cannot unregister itself while it is active.")
		}
		if isVoter(id) {
			return nil, apiErr(kerr.InvalidRequest.Code, "Cannot unregister controller %d because it is part of the voter set.", id)
		}
		if metadataVersion(im) < MVControllerUnregister {
			return nil, apiErr(kerr.UnsupportedVersion.Code, "The current MetadataVersion is too old to support controller unregistration.")
		}
		if _, ok := im.Controllers[id]; !ok {
			return nil, apiErr(kerr.ControllerIDNotRegistered.Code, "Controller ID %d is not currently registered.", id)
		}
		return []metadata.Record{&metadata.UnregisterControllerRecord{ControllerId: id}}, nil
	}, func(_ written, err error) { answer(err) })
}

// UnregisterController: see Core.UnregisterController.
func (c *Controller) UnregisterController(ctx context.Context, id int32, isVoter func(int32) bool) error {
	return awaitErr(ctx, c, func(core *Core, now time.Time, answer func(error)) {
		core.UnregisterController(now, id, isVoter, answer)
	})
}
