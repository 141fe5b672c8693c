package node

import (
	"fmt"
	"time"

	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web/protect"
)

// newIdentity builds the caller identity of cfg.Identity. secret is the
// ticket secret, which also signs visitor cookies. reload, non-nil in jwt
// mode, re-reads the shop's user keys; the node calls it every KeyReload.
// now is the node's clock user tokens are checked against.
func newIdentity(cfg *Config, secret []byte, now func() time.Time) (id protect.Identity, reload func() error, err error) {
	switch cfg.Identity {
	case protect.IdentityHeader:
		h, err := protect.NewHeaderIdentity(cfg.IdentityHeader, cfg.TrustedProxies)
		if err != nil {
			return nil, nil, err
		}
		return h, nil, nil
	case protect.IdentityAnonymous:
		v, err := tokens.NewVisitors(secret)
		if err != nil {
			return nil, nil, err
		}
		return protect.VisitorIdentity{Visitors: v}, nil, nil
	case protect.IdentityJWT:
		u, err := tokens.NewUserVerifier(tokens.UserVerifierConfig{
			JWKSFile: cfg.UserJWKS, Issuer: cfg.UserIssuer, Audience: cfg.UserAudience,
			MaxAge: cfg.UserMaxTokenAge,
		})
		if err != nil {
			return nil, nil, err
		}
		return protect.UserTokenIdentity{Verifier: u, Header: cfg.UserTokenHeader, Now: now}, u.Reload, nil
	}
	return nil, nil, fmt.Errorf("identity %q: want header, anonymous or jwt", cfg.Identity)
}
