package playintegrity

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// AppVerdict is appIntegrity.appRecognitionVerdict: whether Google Play
// recognises the binary that asked for the token.
type AppVerdict string

// The app verdicts Google documents.
const (
	// AppPlayRecognized: the app and certificate match a version Google
	// Play distributes.
	AppPlayRecognized AppVerdict = "PLAY_RECOGNIZED"
	// AppUnrecognizedVersion: the certificate or package name is not one
	// Google Play knows (a sideloaded or repackaged build, or a version
	// not yet known to Play). Accepted only by [Policy.AllowUnrecognizedVersion].
	AppUnrecognizedVersion AppVerdict = "UNRECOGNIZED_VERSION"
	// AppUnevaluated: not evaluated (a requirement was missed). Never
	// accepted.
	AppUnevaluated AppVerdict = "UNEVALUATED"
)

// DeviceLabel is one label of deviceIntegrity.deviceRecognitionVerdict.
type DeviceLabel string

// The device labels a [Policy] may require.
const (
	// MeetsBasicIntegrity: the device passes basic integrity checks; it
	// may be rooted, an emulator or uncertified.
	MeetsBasicIntegrity DeviceLabel = "MEETS_BASIC_INTEGRITY"
	// MeetsDeviceIntegrity: a genuine, Play Protect certified Android
	// device. The default requirement.
	MeetsDeviceIntegrity DeviceLabel = "MEETS_DEVICE_INTEGRITY"
	// MeetsStrongIntegrity: as MeetsDeviceIntegrity, with hardware-backed
	// proof of boot integrity and a recent security update.
	MeetsStrongIntegrity DeviceLabel = "MEETS_STRONG_INTEGRITY"
)

// Licensing is accountDetails.appLicensingVerdict.
type Licensing string

// The licensing verdicts Google documents.
const (
	// Licensed: the user has an entitlement to the app (installed or
	// bought it from Google Play).
	Licensed Licensing = "LICENSED"
	// Unlicensed: the user has no entitlement.
	Unlicensed Licensing = "UNLICENSED"
	// LicensingUnevaluated: not evaluated.
	LicensingUnevaluated Licensing = "UNEVALUATED"
)

// Verdict is a verified token's payload: what Google Play said about the
// request, the app, the device and the account. Only [Verifier.Verify]
// returns a non-zero Verdict, and only when every check passed.
type Verdict struct {
	// RequestPackageName is requestDetails.requestPackageName.
	RequestPackageName string
	// Nonce is requestDetails.nonce (classic requests), RequestHash
	// requestDetails.requestHash (standard requests); one is empty.
	Nonce, RequestHash string
	// Issued is requestDetails.timestampMillis.
	Issued time.Time

	// App is appIntegrity.appRecognitionVerdict.
	App AppVerdict
	// PackageName is appIntegrity.packageName.
	PackageName string
	// CertificateDigests is appIntegrity.certificateSha256Digest: the
	// SHA-256 of each of the app's signing certificates, base64url.
	CertificateDigests []string
	// VersionCode is appIntegrity.versionCode.
	VersionCode int64

	// Device is deviceIntegrity.deviceRecognitionVerdict.
	Device []DeviceLabel

	// Licensing is accountDetails.appLicensingVerdict ("" when absent).
	Licensing Licensing
}

// payload is the verdict JSON as Google sends it. Unknown fields
// (environmentDetails, recentDeviceActivity, …) are ignored.
type payload struct {
	RequestDetails struct {
		RequestPackageName string   `json:"requestPackageName"`
		Nonce              string   `json:"nonce"`
		RequestHash        string   `json:"requestHash"`
		TimestampMillis    protoInt `json:"timestampMillis"`
	} `json:"requestDetails"`
	AppIntegrity struct {
		AppRecognitionVerdict   string   `json:"appRecognitionVerdict"`
		PackageName             string   `json:"packageName"`
		CertificateSha256Digest []string `json:"certificateSha256Digest"`
		VersionCode             protoInt `json:"versionCode"`
	} `json:"appIntegrity"`
	DeviceIntegrity struct {
		DeviceRecognitionVerdict []string `json:"deviceRecognitionVerdict"`
	} `json:"deviceIntegrity"`
	AccountDetails struct {
		AppLicensingVerdict string `json:"appLicensingVerdict"`
	} `json:"accountDetails"`
}

// protoInt is an int64 in proto3 JSON: Google sends it as a decimal string
// ("1678724056875"); a bare number is accepted too.
type protoInt int64

func (p *protoInt) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		b = b[1 : len(b)-1]
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return errors.New("not a decimal int64")
	}
	*p = protoInt(n)
	return nil
}

// parseVerdict decodes a verified payload; it fails when the JSON does not
// parse or misses a field Google marks required.
func parseVerdict(b []byte) (Verdict, error) {
	var p payload
	if err := json.Unmarshal(b, &p); err != nil {
		return Verdict{}, err
	}
	rd, ai := p.RequestDetails, p.AppIntegrity
	switch {
	case rd.RequestPackageName == "":
		return Verdict{}, errors.New("no requestDetails.requestPackageName")
	case rd.TimestampMillis <= 0:
		return Verdict{}, errors.New("no requestDetails.timestampMillis")
	case ai.AppRecognitionVerdict == "":
		return Verdict{}, errors.New("no appIntegrity.appRecognitionVerdict")
	}
	v := Verdict{
		RequestPackageName: rd.RequestPackageName,
		Nonce:              rd.Nonce,
		RequestHash:        rd.RequestHash,
		Issued:             time.UnixMilli(int64(rd.TimestampMillis)),
		App:                AppVerdict(ai.AppRecognitionVerdict),
		PackageName:        ai.PackageName,
		CertificateDigests: ai.CertificateSha256Digest,
		VersionCode:        int64(ai.VersionCode),
		Licensing:          Licensing(p.AccountDetails.AppLicensingVerdict),
	}
	for _, l := range p.DeviceIntegrity.DeviceRecognitionVerdict {
		v.Device = append(v.Device, DeviceLabel(l))
	}
	return v, nil
}
