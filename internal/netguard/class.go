package netguard

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
)

// The classes Class names a failed request by.
const (
	ClassRefusedTarget = "refused_target" // the address is one Policy refuses
	ClassTimeout       = "timeout"        // no answer in time
	ClassDNS           = "dns"            // the name did not resolve
	ClassConnect       = "connect"        // the connection was refused or reset, or no route
	ClassTLS           = "tls"            // the TLS handshake or the certificate failed
	ClassError         = "error"          // anything else
)

// Class names the cause of a failed request coarsely: one of the Class*
// constants. It is what staff and the shop may see of a failure; the
// error's text (addresses, certificate names, resolver details) is not.
func Class(err error) string {
	var (
		dns     *net.DNSError
		verify  *tls.CertificateVerificationError
		alert   tls.AlertError
		header  tls.RecordHeaderError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		ne      net.Error
	)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrRefused):
		return ClassRefusedTarget
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return ClassTimeout
	case errors.As(err, &dns):
		return ClassDNS
	case errors.As(err, &verify), errors.As(err, &alert), errors.As(err, &header),
		errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid),
		strings.Contains(err.Error(), "tls: "):
		return ClassTLS
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.As(err, new(*net.OpError)):
		return ClassConnect
	}
	return ClassError
}
