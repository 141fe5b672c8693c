package event

import (
	"fmt"
	"regexp"
)

// Door is who may come into the sale (package door applies it): block
// lists, eligibility lists and rules. The zero value lets everyone queue.
// Never locks: a change reaches people who already joined at their next
// request.
type Door struct {
	// Rules are tried in order; the first whose When holds decides with
	// its Then. At most MaxRules.
	Rules []Rule `json:"rules,omitempty"`
	// BlockLists name lists (package door/lists) whose members are
	// refused: 403 blocked.
	BlockLists []string `json:"block_lists,omitempty"`
	// EligibleLists name lists at least one of which a caller must be on;
	// empty lets everyone in. A lottery among pre-registered users is an
	// eligibility list and mode lottery.
	EligibleLists []string `json:"eligible_lists,omitempty"`
	// NotEligibleMessage is the detail of a not_eligible refusal, at most
	// 500 bytes.
	//
	// Default: "this sale is open only to people on its list"
	NotEligibleMessage string `json:"not_eligible_message,omitempty"`
}

// Rule is one of a sale's door rules: when the CEL expression When holds
// for a request, Then decides it.
type Rule struct {
	// Name names the rule in the console, the audit trail and the
	// report's counts (ValidRuleName), unique in the sale.
	Name string `json:"name"`
	// When is a CEL expression over the request (package door/rules
	// documents its variables and functions), at most MaxRuleBytes.
	When string `json:"when"`
	// Then is what a match does: "queue", "bypass", "block", "challenge"
	// or "sink".
	Then string `json:"then"`
}

// Limits of Door.
const (
	MaxRules     = 50
	MaxRuleBytes = 2000
	// MaxDoorLists is the most lists of each kind (block, eligible) a
	// sale references.
	MaxDoorLists = 16
)

// DefaultNotEligibleMessage is Door.NotEligibleMessage's default.
const DefaultNotEligibleMessage = "this sale is open only to people on its list"

var (
	ruleName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	listName = regexp.MustCompile(`^([a-z0-9_-]{1,64}\.)?[a-z0-9][a-z0-9_-]{0,63}$`)
)

// ValidRuleName reports whether name may name a rule: lowercase letters,
// digits, '_' and '-', at most 64, not starting with '_' or '-'.
func ValidRuleName(name string) bool { return ruleName.MatchString(name) }

// ValidListName reports whether name may name a list: a shared list's
// name (lowercase letters, digits, '_' and '-', at most 64), or a sale's
// own, "<event id>.<name>".
func ValidListName(name string) bool { return listName.MatchString(name) }

// Thens are the values of Rule.Then.
var Thens = []string{"queue", "bypass", "block", "challenge", "sink"}

// validate checks the door's shape; package door compiles the rules (a
// bad expression is refused at save, naming the rule and the column).
func (d *Door) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: door: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	if len(d.Rules) > MaxRules {
		return bad("at most %d rules", MaxRules)
	}
	seen := map[string]bool{}
	for i, r := range d.Rules {
		switch {
		case !ValidRuleName(r.Name):
			return bad("rules[%d]: name %q must match %s", i, r.Name, ruleName)
		case seen[r.Name]:
			return bad("rules[%d]: name %q is used twice", i, r.Name)
		case r.When == "":
			return bad("rule %q: when is required", r.Name)
		case len(r.When) > MaxRuleBytes:
			return bad("rule %q: when is longer than %d bytes", r.Name, MaxRuleBytes)
		case !validThen(r.Then):
			return bad("rule %q: then must be one of %q", r.Name, Thens)
		}
		seen[r.Name] = true
	}
	for _, l := range [][]string{d.BlockLists, d.EligibleLists} {
		if len(l) > MaxDoorLists {
			return bad("at most %d block and %d eligible lists", MaxDoorLists, MaxDoorLists)
		}
		for _, name := range l {
			if !ValidListName(name) {
				return bad("list name %q must match %s", name, listName)
			}
		}
	}
	if len(d.NotEligibleMessage) > 500 {
		return bad("not_eligible_message is longer than 500 bytes")
	}
	return nil
}

func validThen(then string) bool {
	for _, t := range Thens {
		if then == t {
			return true
		}
	}
	return false
}
