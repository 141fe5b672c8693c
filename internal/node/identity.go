package node

import (
	"fmt"

	"github.com/anteroom/anteroom/web"
)

func newIdentity(cfg *Config, secret []byte) (web.Identity, error) {
	switch cfg.Identity {
	case "header":
		return web.HeaderIdentity{Header: cfg.IdentityHeader}, nil
	}
	return nil, fmt.Errorf("identity %q is not available yet", cfg.Identity)
}
