// Sorting rendered manifests as Helm does, without reading every manifest whole when its kind
// and hook annotations can be read from its first lines.
//
// Helm's releaseutil.SortManifests reads each manifest with a full YAML parse only to learn its
// kind, name and annotations, then orders the manifests by kind and splits off the hooks. When
// every manifest of a render plainly starts with its kind (only comments and a plain
// `apiVersion:` line before a plain `kind:` line at the left margin, no second top-level kind,
// nothing that could spell a hook annotation), the same SortManifests runs over one-line stand-ins
// carrying each kind, and the manifests come back in the order it gives them. Anything else —
// a hook, a quoted or escaped key, an alias merge, a kind not at the top — goes through
// SortManifests whole, so the order and the hooks are Helm's either way.
package main

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
)

// sortManifests is releaseutil.SortManifests in Helm's install order.
func sortManifests(files map[string]string) ([]*release.Hook, []releaseutil.Manifest, error) {
	if standIns, entries, ok := kindStandIns(files); ok {
		hooks, sorted, err := releaseutil.SortManifests(standIns, nil, releaseutil.InstallOrder)
		if err == nil && len(hooks) == 0 {
			out := make([]releaseutil.Manifest, 0, len(sorted))
			for _, m := range sorted {
				i, err := strconv.Atoi(m.Content[strings.LastIndex(m.Content, "# ")+2:])
				if err != nil || i < 0 || i >= len(entries) {
					break
				}
				out = append(out, releaseutil.Manifest{Name: m.Name, Content: entries[i], Head: m.Head})
			}
			if len(out) == len(sorted) {
				return nil, out, nil
			}
		}
	}
	return releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
}

// kindStandIns are the files with each manifest replaced by a stand-in that reads as the same
// kind and carries the manifest's index in `entries`; ok=false when a manifest's kind or
// annotations cannot be told from its first lines.
func kindStandIns(files map[string]string) (map[string]string, []string, bool) {
	standIns := make(map[string]string, len(files))
	var entries []string
	for name, content := range files {
		// Partials and blank files are skipped by SortManifests by their name and content.
		if strings.HasPrefix(path.Base(name), "_") || strings.TrimSpace(content) == "" {
			standIns[name] = content
			continue
		}
		split := splitManifests(content)
		docs := make([]string, len(split))
		for key, doc := range split {
			i, err := strconv.Atoi(strings.TrimPrefix(key, "manifest-"))
			if err != nil || i < 0 || i >= len(docs) {
				return nil, nil, false
			}
			kind, ok := plainKind(doc)
			if !ok {
				return nil, nil, false
			}
			docs[i] = fmt.Sprintf("kind: %s\n# %d", kind, len(entries))
			if kind == "" {
				docs[i] = fmt.Sprintf("# %d", len(entries))
			}
			entries = append(entries, doc)
		}
		standIns[name] = strings.Join(docs, "\n---\n")
	}
	return standIns, entries, true
}

// splitManifests is releaseutil.SplitManifests: a file without `---` cannot hold its
// separator, so it is one manifest, trimmed, without Helm's regular expression run over it.
func splitManifests(content string) map[string]string {
	if strings.Contains(content, "---") {
		return releaseutil.SplitManifests(content)
	}
	if trimmed := strings.TrimSpace(content); trimmed != "" {
		return map[string]string{"manifest-0": trimmed}
	}
	return map[string]string{}
}

var (
	// A kind Helm's YAML reading gives as this string: a plain word that YAML 1.1 does not
	// read as a boolean or null.
	plainKindLine = regexp.MustCompile(`^kind:[ ]+([A-Z][A-Za-z0-9]*)[ ]*$`)
	// A top-level key that Helm's case-insensitive reading takes as the kind.
	anyKindKey   = regexp.MustCompile(`(?i)^kind[ \t]*:`)
	plainAPIKey  = regexp.MustCompile(`^apiVersion:[ ]+[A-Za-z0-9./-]+[ ]*$`)
	yamlBooleans = map[string]bool{"Y": true, "N": true, "Yes": true, "No": true, "On": true,
		"Off": true, "True": true, "False": true, "Null": true, "YES": true, "NO": true,
		"ON": true, "OFF": true, "TRUE": true, "FALSE": true, "NULL": true}
)

// plainKind is the kind of the manifest `doc` when its first lines say it plainly and it can
// carry no hook annotation; "" for a manifest of comments only.
func plainKind(doc string) (string, bool) {
	if strings.Contains(doc, "helm.sh/hook") || strings.ContainsAny(doc, "\\\t") ||
		strings.Contains(doc, "<<") || strings.Contains(doc, "!!") {
		return "", false
	}
	lines := strings.Split(doc, "\n")
	kind, at := "", -1
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if at < 0 {
			switch {
			case trimmed == "" || strings.HasPrefix(trimmed, "#"):
				continue
			case plainAPIKey.MatchString(line):
				continue
			}
			m := plainKindLine.FindStringSubmatch(line)
			if m == nil || yamlBooleans[m[1]] {
				return "", false
			}
			kind, at = m[1], i
			continue
		}
		// After the kind: no second key Helm could read as the kind, no top-level key it
		// could not tell (quoted, explicit, not ASCII).
		if line == "" || line[0] == ' ' || line[0] == '#' || line[0] == '-' {
			continue
		}
		if anyKindKey.MatchString(line) || strings.ContainsAny(line[:1], "\"'?{[&*!|>%@`") ||
			line[0] >= 0x80 {
			return "", false
		}
	}
	if at < 0 {
		// Comments only: an empty manifest, which Helm reads as no kind.
		return "", strings.TrimSpace(doc) == "" || allComments(lines)
	}
	return kind, true
}

func allComments(lines []string) bool {
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		if trimmed != "" && !strings.HasPrefix(trimmed, "#") {
			return false
		}
	}
	return true
}
