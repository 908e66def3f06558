// sortManifests against Helm's SortManifests: the same manifests in the same order, and the
// same hooks, whichever way it reads them.
package main

import (
	"reflect"
	"testing"

	"helm.sh/helm/v3/pkg/releaseutil"
)

func TestSortManifestsAsHelmSortsThem(t *testing.T) {
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  annotations:\n    a: \"1\"\nspec:\n  replicas: 1\n"
	sets := map[string]map[string]string{
		"plain kinds, unknown kinds, several per file": {
			"c/templates/a.yaml":     deploy + "---\n# a comment\napiVersion: v1\nkind: Service\nmetadata:\n  name: s\n",
			"c/templates/b.yaml":     "kind: ConfigMap\napiVersion: v1\ndata:\n  x: |\n    kind: Secret\n",
			"c/templates/crd.yaml":   "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\napiVersion: example.com/v1\nkind: Gadget\n",
			"c/templates/_h.tpl":     "kind: Pod\n",
			"c/templates/blank.yaml": "\n  \n",
			"c/templates/ns.yaml":    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n---\n# only a comment\n",
			"c/templates/list.yaml":  "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\nsecrets:\n- name: x\n- kind: Secret\n",
		},
		"a hook": {
			"c/templates/a.yaml":   deploy,
			"c/templates/job.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  annotations:\n    \"helm.sh/hook\": pre-install\n    \"helm.sh/hook-weight\": \"-1\"\n",
			"c/templates/t.yaml":   "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\n",
		},
		"kinds Helm reads otherwise": {
			"c/templates/a.yaml": deploy,
			"c/templates/b.yaml": "apiVersion: v1\nkind: Service\nKind: ConfigMap\n",
			"c/templates/c.yaml": "apiVersion: v1\nkind: \"Secret\"\n",
			"c/templates/d.yaml": "apiVersion: v1\nkind: Yes\n",
			"c/templates/e.yaml": "metadata:\n  name: x\nkind: Role\n",
		},
	}
	if _, _, ok := kindStandIns(sets["plain kinds, unknown kinds, several per file"]); !ok {
		t.Fatal("plain manifests are not read from their first lines")
	}
	for what, files := range sets {
		wantHooks, want, wantErr := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
		gotHooks, got, gotErr := sortManifests(files)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%s: error %v, Helm's %v", what, gotErr, wantErr)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d manifests, Helm %d", what, len(got), len(want))
		}
		for i := range want {
			if got[i].Name != want[i].Name || got[i].Content != want[i].Content || got[i].Head.Kind != want[i].Head.Kind {
				t.Errorf("%s: manifest %d is %s %q, Helm's %s %q", what, i, got[i].Name, got[i].Content, want[i].Name, want[i].Content)
			}
		}
		if !reflect.DeepEqual(gotHooks, wantHooks) {
			t.Errorf("%s: hooks %v, Helm's %v", what, gotHooks, wantHooks)
		}
	}
}

func TestKindsReadFromTheFirstLinesOnlyWhenPlain(t *testing.T) {
	for doc, want := range map[string]bool{
		"apiVersion: v1\nkind: Service\nspec: {}\n":                                         true,
		"# c\nkind: Service\n":                                                              true,
		"# only a comment":                                                                  true,
		"metadata: {}\nkind: Service\n":                                                     false,
		"apiVersion: v1\nkind: Service\nKIND: Secret\n":                                     false,
		"apiVersion: v1\nkind: Service\n\"kind\": Secret\n":                                 false,
		"apiVersion: v1\nkind: true\n":                                                      false,
		"apiVersion: v1\nkind: On\n":                                                        false,
		"apiVersion: v1\nkind: Service # c\n":                                               false,
		"apiVersion: \"v1\"\nkind: Service\n":                                               false,
		"apiVersion: v1\nkind: Job\nmetadata:\n  annotations:\n    helm.sh/hook: x\n":       false,
		"apiVersion: v1\nkind: Job\nmetadata:\n  annotations:\n    \"helm.sh\\/hook\": x\n": false,
		"apiVersion: v1\nkind: Job\n<<: *base\n":                                            false,
	} {
		if _, ok := plainKind(doc); ok != want {
			t.Errorf("plainKind(%q) ok=%v, want %v", doc, ok, want)
		}
	}
}

func TestSplittingAFileAsHelmSplitsIt(t *testing.T) {
	for _, content := range []string{
		"", "  \n", "kind: A\n", "\n\nkind: A\nx: 1\n\n", "kind: A\n---\nkind: B\n",
		"---\nkind: A\n", "kind: A\n  ---\n", "a: \"--\"\n-- -\n",
	} {
		if got, want := splitManifests(content), releaseutil.SplitManifests(content); !reflect.DeepEqual(got, want) {
			t.Errorf("splitManifests(%q) = %q, Helm's %q", content, got, want)
		}
	}
}
