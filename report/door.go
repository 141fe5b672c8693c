package report

import (
	"slices"
	"strings"

	"github.com/anteroom/anteroom/event"
)

// Door is what the sale's door (package door) did: how many requests each
// of its rules decided, the joins it turned away or sank, and whether the
// sale is a lottery among pre-registered users.
type Door struct {
	// Rules are the matches of every rule of the sale, in the sale's
	// order (0 for a rule that never matched), then those of rules no
	// longer in the sale (renamed or removed), by name. A request counts
	// once for each step that asked the door (join, status poll, gate,
	// room, claim) and whose verdict a rule decided.
	Rules []RuleMatches `json:"rules"`
	// Blocked, NotEligible and Sunk count joins (the JSON join and the
	// basic page's) the door refused 403 blocked or not_eligible, or sent
	// to its endless queue: the refusals join.blocked, join.not_eligible
	// and join.sink.
	Blocked     int64 `json:"blocked"`
	NotEligible int64 `json:"not_eligible"`
	Sunk        int64 `json:"sunk"`
	// EligibleLists are the sale's eligibility lists
	// (event.Door.EligibleLists): empty lets everyone in.
	EligibleLists []string `json:"eligible_lists"`
	// PreRegisteredLottery is true for a lottery among pre-registered
	// users: mode lottery and at least one eligibility list
	// (PreRegisteredLottery).
	PreRegisteredLottery bool `json:"pre_registered_lottery"`
}

// RuleMatches is how many requests one rule of the door decided.
type RuleMatches struct {
	Rule string `json:"rule"`
	// Then is the rule's action as the sale has it now ("queue", "bypass",
	// "block", "challenge", "sink"); "" for a rule no longer in the sale.
	Then    string `json:"then,omitempty"`
	Matches int64  `json:"matches"`
	// Removed is true for a rule that matched but is no longer in the
	// sale (renamed or removed since).
	Removed bool `json:"removed,omitempty"`
}

// PreRegisteredLottery reports whether cfg is a lottery among
// pre-registered users: an eligibility list plus lottery mode.
func PreRegisteredLottery(cfg *event.Config) bool {
	return cfg.Mode == event.Lottery && len(cfg.Door.EligibleLists) > 0
}

// doorOf is the door section of cfg's report from the event's counts
// (Refusals.Read): the fields RulePrefix+name are its rules' matches, the
// rest are refusals, returned without them.
func doorOf(cfg *event.Config, counted map[string]int64) (Door, map[string]int64) {
	d := Door{
		EligibleLists:        append([]string{}, cfg.Door.EligibleLists...),
		PreRegisteredLottery: PreRegisteredLottery(cfg),
		Blocked:              counted["join.blocked"],
		NotEligible:          counted["join.not_eligible"],
		Sunk:                 counted["join.sink"],
		Rules:                make([]RuleMatches, 0, len(cfg.Door.Rules)),
	}
	refusals := make(map[string]int64, len(counted))
	matched := map[string]int64{}
	for k, n := range counted {
		if name, ok := strings.CutPrefix(k, RulePrefix); ok {
			matched[name] = n
			continue
		}
		refusals[k] = n
	}
	for _, r := range cfg.Door.Rules {
		d.Rules = append(d.Rules, RuleMatches{Rule: r.Name, Then: r.Then, Matches: matched[r.Name]})
		delete(matched, r.Name)
	}
	gone := make([]string, 0, len(matched))
	for name := range matched {
		gone = append(gone, name)
	}
	slices.Sort(gone)
	for _, name := range gone {
		d.Rules = append(d.Rules, RuleMatches{Rule: name, Matches: matched[name], Removed: true})
	}
	return d, refusals
}
