package shopper

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/attest/appattest"
	"github.com/anteroom/anteroom/attest/device"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// TestRegistrationsBounded: while the node verifies as many App Attest
// registrations as it takes at once, another is answered 503 degraded
// with Retry-After before its body is read; once one ends, it is taken.
func TestRegistrationsBounded(t *testing.T) {
	api := New(Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, Deps{Attest: refusingAttester{}})
	sale := &admission.Sale{Config: event.Config{ID: "ev", Attestation: event.Attestation{Apple: &event.AppleAttestation{AppID: "ABCDE12345.com.example.shop"}}}}
	app := fiber.New(fiber.Config{ErrorHandler: kit.ErrorHandler(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	app.Post("/events/:id/attest/apple", kit.LoadSale(func(string) (*admission.Sale, bool) { return sale, true }), api.attestApple)
	post := func() int {
		resp, err := app.Test(httptest.NewRequest("POST", "/events/ev/attest/apple", strings.NewReader(`{"key_id":"x","attestation":"eA==","challenge":"y"}`)))
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	for range cap(api.registering) {
		api.registering <- struct{}{}
	}
	if got := post(); got != fiber.StatusServiceUnavailable {
		t.Fatalf("with every slot taken: %d, want 503", got)
	}
	<-api.registering
	if got := post(); got != fiber.StatusBadRequest {
		t.Fatalf("with a slot free: %d, want the attester's 400", got)
	}
}

// refusingAttester refuses every attestation as malformed.
type refusingAttester struct{}

func (refusingAttester) Challenge(string, time.Time) string { return "" }
func (refusingAttester) RegisterApple(context.Context, *event.Config, string, []byte, string) ([]byte, error) {
	return nil, appattest.ErrMalformed
}
func (refusingAttester) Check(context.Context, *event.Config, device.Request) (device.Proof, error) {
	return device.Proof{}, appattest.ErrMalformed
}
