package luascript

import (
	"crypto/sha1"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// pins are every script's version and the SHA1 of its source (prelude
// included): what EVALSHA names. A script, or the prelude, that changes
// without a new pin fails TestScriptsPinned, so every change is deliberate.
var pins = map[string]struct {
	version int
	sha1    string
}{
	"admission/sessions.lua":   {1, "a9864ce2d21399f02e06cc0f3b6c4c25114c7c7e"},
	"admission/health.lua":     {1, "8ab3cb097b50f00d98befcc60f310d74d4bbb379"},
	"admission/finish.lua":     {1, "e43df0c2d6dedb796b8126678a6b7529ca3c72ea"},
	"admission/passmint.lua":   {1, "f0a0c8e0d0e1db8985bb392b99cc9bde43222ae2"},
	"admission/passredeem.lua": {2, "48c7430b4cb5a69f1891662fde679e2c2dedc830"},
	"admission/passrevoke.lua": {1, "78cd646225ccdc8fa3192507332d450fd2bc5ff0"},
	"admission/activate.lua":   {1, "40150a3effb483c9521883239c2aec4daa992445"},
	"admission/enter.lua":      {5, "eb231d0ad405f5b1c17803c62272c6030880ca17"},
	"admission/advance.lua":    {13, "3bdee4eb6b95bcce100626c17b3729c18736d64c"},
	"claim/accept.lua":         {1, "b18dc6f74f2dda1e8831fdaf42053d87d7208ce8"},
	"claim/cancel.lua":         {1, "dafa15781edfbeed462efdfc9551d3ba3eb54927"},
	"claim/claim.lua":          {3, "c3ad99a6a049c77f91d78d4f48308bf6d3b02ca9"},
	"claim/confirm.lua":        {2, "cb3808c9d32617f585c64377426d86f07dc51457"},
	"claim/donate.lua":         {1, "6f0805e3015614cabde41c515bdc1fd01aa1210f"},
	"claim/freeze.lua":         {1, "68e51f517acd4b6a2474f84266824f646865ee0f"},
	"claim/lay.lua":            {1, "1a6d69cbd2a44c183b4651e6754372646c47614d"},
	"claim/layfor.lua":         {2, "804665fdbaec569b6b2477104b4b61ebf68ba05c"},
	"claim/mine.lua":           {1, "742848a9774e3c232a43f3a9fb246ed3722f3167"},
	"claim/pending.lua":        {2, "e9e01c4b61e20794dee0c9b1578044b1e3d8fae6"},
	"claim/release.lua":        {3, "448383bc31e5558e5edc89eb3f80877e346910b9"},
	"claim/restore.lua":        {2, "5bd3c80125cee64701b6281dfba3d59faabaf925"},
	"claim/restore_claims.lua": {2, "0a20b4500d28515863bd6c21cf414d725a299fcc"},
	"claim/settle.lua":         {1, "9bf75999ef26f3db1ddbc8a1b7f0e88846b6333b"},
	"claim/unfreeze.lua":       {1, "17887d4e144bb27f6f256fb77a0af9d6e7158f85"},
	"event/page_put.lua":       {1, "fb1eb49fac5f7003588069513a8682ea25759511"},
	"event/get.lua":            {1, "209dfc7599cf78997d7c4931c3c09235afd61898"},
	"event/put.lua":            {1, "5aeb7569d1025e1f0a887f04cb3c8d06a56a8d1f"},
	"staff/audit_once.lua":     {1, "3795a83a6b7f4a5207affec798f7855c25cd05af"},
	"staff/audit_capped.lua":   {1, "f840bae2f553d67d03cc1cedc045bbc7518630d8"},
	"staff/blocked.lua":        {1, "5376324bd631b4b8ca98ff57614610eeca9df505"},
	"staff/create.lua":         {1, "a851e339b3e1f00175c392dc767a94d28b33000b"},
	"staff/delete.lua":         {1, "6176820e28af31216d51323070b2e5881d2f1618"},
	"staff/newkey.lua":         {1, "38f6e854fd7cd5150b80aef2bdc64370771df477"},
	"staff/password.lua":       {1, "44830105358781568e13c153032d338d3ac6c33d"},
	"staff/setrole.lua":        {1, "9f9b59f7edd6054aecd0786dca83e3bc9333ad28"},
	"staff/failed.lua":         {1, "decc429d7fc3a6924a1b1c0519e031a3ef230741"},
	"lifecycle/queueing.lua":   {1, "1956b859e27f0fc5b536fff9bf38443f1a71d1dd"},
	"lifecycle/record.lua":     {5, "8c4fedf585de49df635929fe4b93b800ca80f69d"},
	"limit/bucket.lua":         {1, "adec3d64e72e43ead04076069a270f7d1d4204a6"},
	"limit/heartbeat.lua":      {1, "1e82913de175ad4ead0edd0816e21ef2f2b00a39"},
	"limit/reserve.lua":        {1, "5ae450cc915d0a9251b683a102722fc6b2277a60"},
	"queue/join.lua":           {8, "6f619c023dfb87083f0ebf64cd876e376f2cd7f7"},
	"queue/readshard.lua":      {4, "423782f5078f88d2f212224ae40dfd2e12ffc4fb"},
	"push/unlock.lua":          {1, "1337074e8394c6ed699bec6fd957241e972a318a"},

	// Device attestation (attest/device).
	"attest/device/assert.lua":   {1, "a1df61cef260fc6fd58f015a471573028c93b6e4"},
	"attest/device/register.lua": {1, "00a4bf2b94fbedd69b0405718bafbb75b49c4d33"},
}

var versionLine = regexp.MustCompile(`^-- ([a-z_]+\.lua) v([0-9]+): `)

// TestScriptsPinned reads every .lua file of the module and checks its
// version line and its SHA1 against pins.
func TestScriptsPinned(t *testing.T) {
	root := filepath.Join("..", "..")
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".lua" {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "deploy/") {
			return nil // HAProxy's Lua (the gate), not a Redis script
		}
		if rel == "internal/luascript/prelude.lua" || rel == "internal/luascript/seqfence.lua" || rel == "internal/luascript/listhas.lua" {
			return nil
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		seen[rel] = true
		m := versionLine.FindSubmatch(body)
		if m == nil || string(m[1]) != filepath.Base(path) {
			t.Errorf("%s: the first line must be %q", rel, "-- "+filepath.Base(path)+" vN: what it does")
			return nil
		}
		version, _ := strconv.Atoi(string(m[2]))
		sum := sha1.Sum([]byte(Source(string(body))))
		got := hex.EncodeToString(sum[:])
		pin, ok := pins[rel]
		switch {
		case !ok:
			t.Errorf("%s is not pinned: add %q: {%d, %q},", rel, rel, version, got)
		case pin.sha1 == got && pin.version != version:
			t.Errorf("%s: version v%d, pinned v%d for the same text", rel, version, pin.version)
		case pin.sha1 != got && pin.version == version:
			t.Errorf("%s (or the prelude) changed: give it version v%d and pin %q: {%d, %q},", rel, version+1, rel, version+1, got)
		case pin.sha1 != got:
			t.Errorf("%s is v%d now: pin %q: {%d, %q},", rel, version, rel, version, got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel := range pins {
		if !seen[rel] {
			t.Errorf("%s is pinned but no longer exists: remove its pin", rel)
		}
	}
}
