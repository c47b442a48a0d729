package inspector

import (
	"fmt"
	"net"
	"net/netip"
)

// DefaultListen is the address Listen uses for "": a free port on
// 127.0.0.1.
const DefaultListen = "127.0.0.1:0"

// Listen listens on addr, which must name a loopback address (127.0.0.0/8,
// ::1 or localhost) and a port (0: a free one); any other address is
// refused with an error saying why, so the page is never reachable from
// another machine.
func Listen(addr string) (net.Listener, error) {
	if addr == "" {
		addr = DefaultListen
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("-listen %q: want 127.0.0.1:PORT: %w", addr, err)
	}
	if !isLoopback(host) {
		return nil, fmt.Errorf("-listen %q: the inspector signs with your key and listens on a loopback address only (127.0.0.1, ::1 or localhost), not %q", addr, host)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	return net.Listen("tcp", net.JoinHostPort(host, port))
}

// isLoopback reports whether host (without a port) is "localhost" or a
// loopback IP literal. An empty host (every interface) is not.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.IsLoopback()
}
