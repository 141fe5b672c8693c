package staffapi

import (
	"testing"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/door/lists"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/lifecycle"
	"github.com/anteroom/anteroom/report"
	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/web/openapi/conform"
)

// configParts are the event configuration's nested objects, which a PUT
// merges into the stored ones field by field: the contract lists none of
// their fields as required (see conform.Shape).
var configParts = []string{"Limits", "Budget", "StatusBudget", "Rate", "PoW", "Captcha", "Shop", "HealthCheck"}

// TestContractShapes: every staff API body in the contract
// (web/openapi/openapi.yaml) has exactly the fields of the Go value the
// handler decodes or answers, at every depth, with their JSON types; a
// request body the handler decodes strictly is closed
// (additionalProperties: false), and an answer requires every field the
// Go value always writes. A field added to event.Config, report.Report or
// any of these without its line in the contract fails here.
func TestContractShapes(t *testing.T) {
	c, err := conform.Shared()
	if err != nil {
		t.Fatal(err)
	}
	// Answers built from a fiber.Map: the Go value of each is the map's
	// keys and values.
	type (
		eventList struct {
			Events []eventSummaryJSON `json:"events"`
		}
		accountList struct {
			Accounts []staff.Account `json:"accounts"`
		}
		newKey struct {
			Account string `json:"account"`
			Prefix  string `json:"prefix"`
			Key     string `json:"key"`
		}
		auditList struct {
			Entries []staff.Entry `json:"entries"`
		}
		lifecycleList struct {
			Events []lifecycle.Event `json:"events"`
		}
		newPass struct {
			Pass   string               `json:"pass"`
			Record admission.PassRecord `json:"record"`
			Header string               `json:"header"`
		}
		passList struct {
			Passes []admission.PassRecord `json:"passes"`
			Counts admission.PassCounts   `json:"counts"`
		}
		listList struct {
			Lists []lists.Meta `json:"lists"`
		}
	)
	bodies := []conform.Shaped{
		{Op: "signIn", Value: signInJSON{}},
		{Op: "signIn", Status: 200, Value: consoleSessionJSON{}},
		{Op: "sessionInfo", Status: 200, Value: consoleSessionJSON{}},
		{Op: "listEvents", Status: 200, Value: eventList{}},
		{Op: "eventDefaults", Status: 200, Value: event.Config{}},
		{Op: "listAccounts", Status: 200, Value: accountList{}},
		{Op: "createAccount", Value: newAccountJSON{}},
		{Op: "createAccount", Status: 201, Value: staff.Account{}},
		{Op: "setAccountRole", Value: roleJSON{}},
		{Op: "setAccountRole", Status: 200, Value: staff.Account{}},
		{Op: "createKey", Status: 201, Value: newKey{}},
		{Op: "listAudit", Status: 200, Value: auditList{}},
		{Op: "putEvent", Value: event.Config{}},
		{Op: "putEvent", Status: 200, Value: adminEventJSON{}},
		{Op: "putEvent", Status: 201, Value: adminEventJSON{}},
		{Op: "getAdminEvent", Status: 200, Value: adminEventJSON{}},
		{Op: "pauseEvent", Status: 200, Value: adminEventJSON{}},
		{Op: "resumeEvent", Status: 200, Value: adminEventJSON{}},
		{Op: "closeEvent", Value: event.Closure{}},
		{Op: "closeEvent", Status: 200, Value: adminEventJSON{}},
		{Op: "reopenEvent", Status: 200, Value: adminEventJSON{}},
		{Op: "rebuildEvent", Status: 200, Value: claim.Report{}},
		{Op: "lifecycleEvents", Status: 200, Value: lifecycleList{}},
		{Op: "getReport", Status: 200, Value: report.Report{}},
		{Op: "mintPass", Value: mintPassJSON{}},
		{Op: "mintPass", Status: 201, Value: newPass{}},
		{Op: "listPasses", Status: 200, Value: passList{}},
		{Op: "revokePass", Status: 200, Value: admission.PassRecord{}},
		{Op: "listLists", Status: 200, Value: listList{}},
		{Op: "createList", Value: newListJSON{}},
		{Op: "createList", Status: 201, Value: lists.Meta{}},
		{Op: "getList", Status: 200, Value: lists.Meta{}},
		{Op: "loadList", Status: 200, Value: loadJSON{}},
		{Op: "addListEntry", Status: 200, Value: lists.Meta{}},
		{Op: "removeListEntry", Status: 200, Value: lists.Meta{}},
	}
	for _, e := range c.Shapes(bodies, configParts...) {
		t.Error(e)
	}
}
