package appattest

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	_ "embed"
	"encoding/hex"
	"encoding/pem"
	"errors"
)

// appleRootPEM is Apple's "Apple App Attestation Root CA" (ECDSA P-384,
// valid 2020-03-18 to 2045-03-15), published at
// https://www.apple.com/certificateauthority/Apple_App_Attestation_Root_CA.pem.
//
//go:embed apple_app_attestation_root_ca.pem
var appleRootPEM []byte

// AppleRootSHA256 is the SHA-256 of the embedded root's DER, in hex (the
// fingerprint 1C:B9:82:3B:…:C9:32). [AppleRoot] refuses an embedded file
// that does not hash to it, so an edit to the PEM cannot pass unseen.
const AppleRootSHA256 = "1cb9823ba28ba6ad2d33a006941de2ae4f513ef1d4e831b9f7e0fa7b6242c932"

// AppleRoot returns the embedded Apple App Attestation Root CA after
// checking it against the pin [AppleRootSHA256]. Each call parses a new
// copy.
func AppleRoot() (*x509.Certificate, error) {
	block, rest := pem.Decode(appleRootPEM)
	if block == nil || block.Type != "CERTIFICATE" || len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New("appattest: the embedded Apple root is not one PEM certificate")
	}
	sum := sha256.Sum256(block.Bytes)
	if hex.EncodeToString(sum[:]) != AppleRootSHA256 {
		return nil, errors.New("appattest: the embedded Apple root does not match its pin")
	}
	return x509.ParseCertificate(block.Bytes)
}
