package server

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// checkOwnVoter refuses a static quorum this controller is not a voter
// of, or lists at a port none of its controller listeners has.
//
// Apache refuses the first (KafkaConfig: "the node id must be included in
// the set of voters"); left through, the node would start as an observer
// no one can vote for, silently. Apache accepts the second, and then the
// other voters dial a port this node does not serve: the quorum runs one
// voter short, and a single voter cannot reach itself to register. A
// listener on port 0 takes any free port, so its entry cannot be checked;
// a port mapped on the way (NAT) is told apart by advertised.listeners.
func (p *parser) checkOwnVoter(c *Config) {
	if len(c.Voters) == 0 || p.err != nil {
		return
	}
	i := slices.IndexFunc(c.Voters, func(v Voter) bool { return v.ID == c.NodeID })
	if i < 0 {
		ids := make([]string, len(c.Voters))
		for j, v := range c.Voters {
			ids[j] = strconv.Itoa(int(v.ID))
		}
		p.setErr("controller.quorum.voters", fmt.Errorf("does not list node.id %d (it lists %s): a controller of a static quorum must be one of its voters, "+
			"as in Apache. Add %d@host:port to controller.quorum.voters on every controller, or correct node.id; a controller "+
			"that joins a running quorum later needs a dynamic one (controller.quorum.bootstrap.servers, format --no-initial-controllers)",
			c.NodeID, strings.Join(ids, ", "), c.NodeID))
		return
	}
	if err := c.CheckOwnEndpoint(c.Voters[i].Host, c.Voters[i].Port); err != nil {
		p.setErr("controller.quorum.voters", err)
	}
}

// CheckOwnEndpoint refuses host:port as this node's entry in a voter set
// (controller.quorum.voters, format's --initial-controllers) when none of
// its controller listeners serves that port (see checkOwnVoter).
func (c *Config) CheckOwnEndpoint(host string, port uint16) error {
	var ports []string
	for _, name := range c.ControllerListenerName {
		for _, e := range slices.Concat(c.Listeners, c.AdvertisedListeners) {
			if e.Name != name {
				continue
			}
			if e.Port == 0 || e.Port == port {
				return nil
			}
			ports = append(ports, strconv.Itoa(int(e.Port)))
		}
	}
	if len(ports) == 0 {
		return nil // no controller listener: refused with its own key
	}
	addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
	name := c.ControllerListenerName[0]
	return fmt.Errorf("lists this node (%d) at %s, but its controller listener %s serves port %s: the other voters "+
		"would dial a port this node does not serve. Correct the entry's port; if that port is mapped to the listener on the way (NAT), "+
		"set advertised.listeners=%s://%s", c.NodeID, addr, name, strings.Join(slices.Compact(ports), " and "), name, addr)
}
