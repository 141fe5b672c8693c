package tokens

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// tempPrefix starts the name of every temporary file this package writes;
// directory scans skip such names.
const tempPrefix = ".tmp-"

// writeFileAtomic makes dir/name hold data with mode perm, so that readers
// (other processes, other nodes sharing the directory) see either the old
// content or the new one, never a torn file. The data is written to a temp
// file in dir, synced, then renamed over name.
//
// With exclusive set the temp file is hard-linked to name instead, which
// fails with an error matching fs.ErrExist when name already exists: the
// first writer wins and no one overwrites it.
func writeFileAtomic(dir, name string, data []byte, perm fs.FileMode, exclusive bool) (err error) {
	f, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if rmErr := os.Remove(tmp); err == nil && rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
			err = rmErr
		}
	}()
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	final := filepath.Join(dir, name)
	if exclusive {
		err = os.Link(tmp, final)
	} else {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir flushes a directory entry change to disk. It is best effort:
// some file systems refuse to sync a directory, and the rename itself is
// already atomic for readers.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	_ = d.Sync()
	return d.Close()
}
