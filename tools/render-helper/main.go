// fief-render-helper renders Helm charts and kustomizations for fief, with Helm's and
// kustomize's own Go packages, so fief's objects are exactly what `helm template` and
// `kustomize build` give.
//
// In: one JSON request per line on stdin (see request below). Out: one JSON answer per line
// on stdout, in request order. The helper reads no file and opens no connection: every file
// it renders arrives in a request, kept in memory by the key fief gives it (a content hash),
// so a chart is loaded once and rendered with many value sets.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// request is one render: `kind` is "helm" or "kustomize".
type request struct {
	ID        uint64            `json:"id"`
	Kind      string            `json:"kind"`
	Key       string            `json:"key"`
	Files     map[string]string `json:"files,omitempty"`
	Root      string            `json:"root,omitempty"`
	Values    json.RawMessage   `json:"values,omitempty"`
	Release   string            `json:"release,omitempty"`
	Namespace string            `json:"namespace"`
	// helm: the Kubernetes version `.Capabilities.KubeVersion` and `kubeVersion:` see (empty:
	// Helm's built-in), the API versions added to Helm's default `.Capabilities.APIVersions`
	// (`helm template --kube-version --api-versions`), and whether the chart's `crds/` files
	// come out too (marked `crd`).
	KubeVersion string   `json:"kubeVersion,omitempty"`
	APIVersions []string `json:"apiVersions,omitempty"`
	IncludeCRDs bool     `json:"includeCrds,omitempty"`
	// kustomize: what the component's values set in the build (see kustomizeSettings).
	Kustomize *kustomizeSettings `json:"kustomize,omitempty"`
}

// document is one rendered manifest and the file it came from.
// `crd` marks a file of a chart's `crds/` folder, sent as Helm reads it (not a template).
type document struct {
	Source string `json:"source"`
	Text   string `json:"text"`
	CRD    bool   `json:"crd,omitempty"`
}

// answer is the reply to one request: documents, or an error. `missing` says the helper does
// not hold the files of `key` (fief sends them again).
type answer struct {
	ID        uint64     `json:"id"`
	Documents []document `json:"documents,omitempty"`
	Error     string     `json:"error,omitempty"`
	Missing   bool       `json:"missing,omitempty"`
}

// maxLine bounds one request line (a chart's files travel in it).
const maxLine = 256 << 20

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		fmt.Println(versionLine())
		return
	}
	// `pull` fetches one chart archive (pull.go); every other use renders, offline.
	if len(os.Args) > 1 && os.Args[1] == "pull" {
		if err := runPull(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "fief-render-helper pull:", err)
			os.Exit(1)
		}
		return
	}
	// No program is run and no remote base is fetched: with an empty PATH nothing can be
	// executed even if a code path tried (kustomize's git cloner runs `git`).
	_ = os.Setenv("PATH", "")
	if err := serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fief-render-helper:", err)
		os.Exit(1)
	}
}

// serve answers requests until stdin closes.
func serve(in io.Reader, out io.Writer) error {
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 1<<20), maxLine)
	writer := bufio.NewWriter(out)
	encoder := json.NewEncoder(writer)
	encoder.SetEscapeHTML(false)
	state := newStore()
	for scanner.Scan() {
		var req request
		var ans answer
		if err := json.Unmarshal(scanner.Bytes(), &req); err != nil {
			ans.Error = "the request is not JSON: " + err.Error()
		} else {
			ans = state.handle(&req)
			ans.ID = req.ID
		}
		if err := encoder.Encode(&ans); err != nil {
			return err
		}
		if err := writer.Flush(); err != nil {
			return err
		}
	}
	return scanner.Err()
}

// handle dispatches one request by kind.
func (s *store) handle(req *request) answer {
	switch req.Kind {
	case "helm":
		return s.renderHelm(req)
	case "kustomize":
		return s.renderKustomize(req)
	default:
		return answer{Error: fmt.Sprintf("unknown kind %q (helm or kustomize)", req.Kind)}
	}
}

// versionLine names the pinned engines.
func versionLine() string {
	return fmt.Sprintf("fief-render-helper helm=%s kustomize-api=%s k8s=%s", helmVersion, kustomizeVersion, kubeVersion())
}
