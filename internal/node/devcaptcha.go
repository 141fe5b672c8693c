package node

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// checkDevSiteverify refuses a development siteverify URL
// (ANTEROOM_DEV_CAPTCHA_SITEVERIFY_URL) that does not stay on this
// machine: its host must be a loopback address (127.0.0.0/8, ::1) or
// localhost resolving to loopback addresses only. A stub elsewhere that
// answers yes would pass every captcha, and each check sends it the
// sale's captcha secret, over plain http when the URL says so.
func checkDevSiteverify(raw string) error {
	if raw == "" {
		return nil
	}
	refuse := func(why string) error {
		return fmt.Errorf("refusing to start: ANTEROOM_DEV_CAPTCHA_SITEVERIFY_URL %q: %s; it is a development setting for a stub on this machine (127.0.0.1, [::1] or localhost)", raw, why)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return refuse("not an absolute http(s) URL")
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" || !ip.IsLoopback() {
			return refuse("its host is not a loopback address")
		}
		return nil
	}
	if !strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return refuse("its host is neither a loopback address nor localhost")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return refuse("localhost does not resolve here")
	}
	for _, ip := range ips {
		if !ip.Unmap().IsLoopback() {
			return refuse("localhost resolves to " + ip.String() + ", not a loopback address")
		}
	}
	return nil
}
