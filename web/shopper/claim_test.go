package shopper

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/anteroom/anteroom/claim"
	"github.com/gofiber/fiber/v2"
)

// TestWriteClaimAsJSONEncoder holds writeClaim's hand-written answer to
// what the JSON encoder writes, for plain and for other values.
func TestWriteClaimAsJSONEncoder(t *testing.T) {
	for _, res := range []claim.Result{
		{ClaimID: "3-0123456789abcdef01234567", Status: "pending"},
		{ClaimID: "0-ff", Status: "confirmed"},
		{ClaimID: `1-"quoted"`, Status: "pend\ning"},
		{ClaimID: "2-<é>", Status: ""},
	} {
		app := fiber.New()
		app.Get("/", func(c *fiber.Ctx) error { return writeClaim(c.Status(fiber.StatusCreated), res) })
		resp, err := app.Test(httptest.NewRequest("GET", "/", nil))
		if err != nil {
			t.Fatal(err)
		}
		var got claimJSON
		body := make([]byte, 512)
		n, _ := resp.Body.Read(body)
		if err := json.Unmarshal(body[:n], &got); err != nil {
			t.Fatalf("%+v: answer %q is not JSON: %v", res, body[:n], err)
		}
		want, _ := json.Marshal(claimJSON{ClaimID: res.ClaimID, Status: res.Status})
		if string(body[:n]) != string(want) || resp.StatusCode != fiber.StatusCreated || resp.Header.Get("Content-Type") != fiber.MIMEApplicationJSON {
			t.Errorf("%+v: %d %q %q, want 201 %q %q", res, resp.StatusCode, resp.Header.Get("Content-Type"), body[:n], fiber.MIMEApplicationJSON, want)
		}
	}
}

// TestValidIdemKey holds validIdemKey to the documented pattern.
func TestValidIdemKey(t *testing.T) {
	long := make([]byte, 129)
	for i := range long {
		long[i] = 'a'
	}
	for key, want := range map[string]bool{
		"":                 false,
		"a":                true,
		"Ab9._:-":          true,
		string(long[:128]): true,
		string(long):       false,
		"a b":              false,
		"a\n":              false,
		"é":                false,
		"k/1":              false,
	} {
		if got := validIdemKey(key); got != want {
			t.Errorf("validIdemKey(%q) = %v, want %v", key, got, want)
		}
	}
}
