// refusal.go says, in the log, what a refused request was and why: the
// client's address (on the connection's logger), the API, version,
// correlation id and client id when the header got that far, and the
// reason in kraftd's words rather than the decoding library's.

package server

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/protocol"
)

// errIdle ends a connection that sent nothing for connections.max.idle.ms.
var errIdle = errors.New("server: connection idle")

// refusal is a request the server will not serve; the connection closes.
type refusal struct {
	header protocol.RequestHeader
	known  bool // the header's fixed fields (key, version, correlation id) were read
	reason string
}

func (r *refusal) Error() string { return r.reason }

// refuseHeader explains a header that protocol.ParseRequestHeader refused.
func refuseHeader(h protocol.RequestHeader, size int, err error) *refusal {
	switch {
	case size < 8:
		return &refusal{reason: fmt.Sprintf("frame of %d bytes is shorter than a request header's 8 fixed bytes", size)}
	case errors.Is(err, protocol.ErrUnknownKey):
		return &refusal{h, true, fmt.Sprintf("API key %d is unknown", h.Key)}
	default:
		return &refusal{h, true, fmt.Sprintf("header does not parse: the client id or tagged fields run past the frame's %d bytes", size)}
	}
}

// errShortBody is the error kmsg returns for every short or inconsistent
// body, including an array whose count is more than the bytes left could
// hold, which it refuses before allocating. It is kmsg's private copy of
// kbin.ErrNotEnoughData ("response did not contain enough data"), worded
// for a client reading responses, so it is caught here by decoding nothing.
var errShortBody = kmsg.NewPtrFetchRequest().ReadFrom(nil)

// describeDecodeError words a body decoding error.
func describeDecodeError(err error, name string, version int16, size int) string {
	if errShortBody != nil && errors.Is(err, errShortBody) {
		return fmt.Sprintf("its %d bytes end before the fields of %s v%d do, or an array or string claims more than is left", size, name, version)
	}
	return err.Error()
}

// withHeader adds what is known of a request to a log event.
func withHeader(e *zerolog.Event, h protocol.RequestHeader) *zerolog.Event {
	return e.Str("api", kmsg.NameForKey(h.Key)).Int16("api_key", h.Key).Int16("version", h.Version).
		Int32("correlation_id", h.CorrelationID).Str("client_id", h.ClientID)
}

// logRefused logs a request decode refused.
func logRefused(log zerolog.Logger, err error) {
	var r *refusal
	if !errors.As(err, &r) {
		log.Warn().Str("reason", err.Error()).Msg("refused request; closing connection")
		return
	}
	e := log.Warn()
	if r.known {
		e = withHeader(e, r.header)
	}
	e.Str("reason", r.reason).Msg("refused request; closing connection")
}

// logUnreadable logs why reading the next frame ended the connection. A
// client that hangs up between frames is not worth a line.
func logUnreadable(log zerolog.Logger, err error, maxFrame int32) {
	var size *protocol.FrameSizeError
	var tooLarge *frameTooLarge
	var overBudget *frameOverBudget
	switch {
	case errors.Is(err, io.EOF):
	case errors.Is(err, errIdle):
		log.Debug().Msg("closing idle connection: nothing sent for connections.max.idle.ms")
	case errors.As(err, &size) && size.Size < 0:
		log.Warn().Str("reason", fmt.Sprintf("frame size %d is negative (%s)", size.Size, size.Hint)).Msg("refused request; closing connection")
	case errors.As(err, &size):
		log.Warn().Str("reason", fmt.Sprintf("frame of %d bytes exceeds socket.request.max.bytes %d (%s)", size.Size, maxFrame, size.Hint)).Msg("refused request; closing connection")
	case errors.As(err, &tooLarge):
		log.Warn().Str("reason", tooLarge.Error()).Msg("refused request; closing connection")
	case errors.As(err, &overBudget):
		log.Warn().Str("reason", overBudget.Error()).Msg("refused request; closing connection")
	case errors.Is(err, io.ErrUnexpectedEOF):
		log.Warn().Str("reason", "the client closed the connection in the middle of a frame").Msg("closing connection")
	case errors.Is(err, os.ErrDeadlineExceeded):
		log.Warn().Str("reason", "a frame was not completed within connections.max.idle.ms").Msg("closing connection")
	default:
		log.Warn().Err(err).Msg("closing connection: reading failed")
	}
}
