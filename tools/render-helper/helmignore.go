// .helmignore: the chart files `helm template <folder>` does not load.
package main

import (
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/ignore"
)

// loadedNames are the names of the chart's files, text and bytes, in name order, less those
// its `.helmignore` and Helm's default rules name, as Helm's loader.LoadDir loads a chart
// folder: a folder a rule matches is skipped whole, then each remaining file is matched, by
// its path in the chart. As in LoadDir, only the chart's top `.helmignore` is read, for
// subchart folders too (a subchart's own is one of its files), whatever bytes it holds. A
// repository chart's files were packaged through the same rules, so they all pass again:
// in-repo and repository charts load alike. One difference stays: a packed subchart
// (`charts/<x>.tgz`) arrives unpacked as the folder `charts/<x>/`, so the top rules reach its
// files, which Helm, loading the archive whole, leaves in.
func loadedNames(files *chartFiles) ([]string, error) {
	rules := ignore.Empty()
	text, ok := files.text[ignore.HelmIgnore]
	if data, binary := files.binary[ignore.HelmIgnore]; binary {
		text, ok = string(data), true
	}
	if ok {
		parsed, err := ignore.Parse(strings.NewReader(text))
		if err != nil {
			return nil, err
		}
		rules = parsed
	}
	rules.AddDefaults()
	kept := make([]string, 0, len(files.text)+len(files.binary))
	// Whether each folder is ignored, decided once per folder.
	folders := map[string]bool{}
	keep := func(name string) {
		if !ignoredFile(rules, name, folders) {
			kept = append(kept, name)
		}
	}
	for name := range files.text {
		keep(name)
	}
	for name := range files.binary {
		keep(name)
	}
	sort.Strings(kept)
	return kept, nil
}

// ignoredFile: a folder above `name` or `name` itself matches the rules.
func ignoredFile(rules *ignore.Rules, name string, folders map[string]bool) bool {
	parts := strings.Split(name, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		skip, seen := folders[dir]
		if !seen {
			skip = rules.Ignore(dir, entryInfo{name: path.Base(dir), dir: true})
			folders[dir] = skip
		}
		if skip {
			return true
		}
	}
	return rules.Ignore(name, entryInfo{name: path.Base(name)})
}

// entryInfo is the os.FileInfo the rules are given: they read only whether it is a folder.
type entryInfo struct {
	name string
	dir  bool
}

func (e entryInfo) Name() string { return e.name }
func (e entryInfo) Size() int64  { return 0 }
func (e entryInfo) Mode() os.FileMode {
	if e.dir {
		return os.ModeDir
	}
	return 0
}
func (e entryInfo) ModTime() time.Time { return time.Time{} }
func (e entryInfo) IsDir() bool        { return e.dir }
func (e entryInfo) Sys() interface{}   { return nil }
