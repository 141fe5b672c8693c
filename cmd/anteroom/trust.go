package main

import (
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/tokens"
)

// trustFlags registers the settings of what a node believes (user tokens,
// metrics exposure) and returns a function that reads them into a
// node.Config after fs.Parse. Profiling (-pprof-addr) is here too: like
// the metrics address, it decides what a listener exposes.
func trustFlags(fs *flag.FlagSet, env func(name, def string) string) func(*node.Config) error {
	anyIssAud := fs.String("user-accept-any-issuer-audience", env("USER_ACCEPT_ANY_ISSUER_AUDIENCE", "false"), "jwt mode: start without -user-issuer or -user-audience and accept any iss/aud not configured; unsafe (ANTEROOM_USER_ACCEPT_ANY_ISSUER_AUDIENCE)")
	maxAge := fs.String("user-max-token-age", env("USER_MAX_TOKEN_AGE", tokens.DefaultUserMaxAge.String()), "jwt mode: longest user-token lifetime (exp - iat) accepted; -1s: no cap (ANTEROOM_USER_MAX_TOKEN_AGE)")
	metricsAddr := fs.String("metrics-addr", env("METRICS_ADDR", ""), "serve /metrics only on this address, not on -addr; set it in production (ANTEROOM_METRICS_ADDR)")
	pprofAddr := fs.String("pprof-addr", env("PPROF_ADDR", ""), "serve Go profiles (/debug/pprof/) on this private address; empty: off (ANTEROOM_PPROF_ADDR)")
	return func(cfg *node.Config) error {
		cfg.MetricsAddr, cfg.PprofAddr = *metricsAddr, *pprofAddr
		b, err := strconv.ParseBool(*anyIssAud)
		if err != nil {
			return fmt.Errorf("user accept any issuer audience %q: want true or false", *anyIssAud)
		}
		cfg.UserAcceptAnyIssuerAudience = b
		d, err := time.ParseDuration(*maxAge)
		if err != nil || d == 0 {
			return fmt.Errorf("user max token age %q: want a duration such as 24h (negative: no cap)", *maxAge)
		}
		cfg.UserMaxTokenAge = d
		return nil
	}
}
