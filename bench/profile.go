package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// profileDir is -profiles: where the node's CPU profiles are kept.
var profileDir string

// keepProfile copies the profile at path, of binary bin, to profileDir
// (when set) as name.pprof (name-2.pprof, … for a later step's), with
// the binary beside it.
func keepProfile(bin, path, name string) error {
	if profileDir == "" {
		return nil
	}
	if err := os.MkdirAll(profileDir, 0o755); err != nil {
		return err
	}
	file := name + ".pprof"
	for i := 2; ; i++ {
		if _, err := os.Stat(filepath.Join(profileDir, file)); err != nil {
			break
		}
		file = fmt.Sprintf("%s-%d.pprof", name, i)
	}
	for from, to := range map[string]string{path: file, bin: filepath.Base(bin)} {
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(profileDir, to), b, 0o755); err != nil {
			return err
		}
	}
	return nil
}
