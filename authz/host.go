package authz

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// HostOf renders a client's address as Java's InetAddress.getHostAddress
// does, which is the text Apache compares an ACL's host with: dotted
// IPv4 (also for an IPv4-mapped IPv6 address, which Java turns into an
// Inet4Address), and IPv6 as eight hexadecimal groups without leading zeros
// and without "::" compression ("0:0:0:0:0:0:0:1"), then "%zone" if any.
func HostOf(addr net.Addr) string {
	var ip netip.Addr
	switch a := addr.(type) {
	case *net.TCPAddr:
		ip, _ = netip.AddrFromSlice(a.IP)
		if a.Zone != "" {
			ip = ip.WithZone(a.Zone)
		}
	case nil:
		return ""
	default:
		ap, err := netip.ParseAddrPort(addr.String())
		if err != nil {
			return addr.String()
		}
		ip = ap.Addr()
	}
	return JavaHostAddress(ip)
}

// JavaHostAddress renders ip as Java's getHostAddress does (see HostOf).
func JavaHostAddress(ip netip.Addr) string {
	if !ip.IsValid() {
		return ""
	}
	if ip.Is4() || ip.Is4In6() {
		return ip.Unmap().String()
	}
	b := ip.As16()
	var sb strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			sb.WriteByte(':')
		}
		fmt.Fprintf(&sb, "%x", uint16(b[i])<<8|uint16(b[i+1]))
	}
	if z := ip.Zone(); z != "" {
		sb.WriteString("%" + z)
	}
	return sb.String()
}
