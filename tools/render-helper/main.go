// fief-render-helper renders Helm charts and kustomizations for fief, with Helm's and
// kustomize's own Go packages, so fief's objects are exactly what `helm template` and
// `kustomize build` give.
//
// In: one JSON request per line on stdin (see request below). Out: one JSON answer per line
// on stdout, with the request's id, in the order the renders finish (several render at once,
// one per core). The helper reads no file and opens no connection: every file it renders
// arrives in a request, kept in memory by the key fief gives it (a content hash), so a chart
// is loaded once and rendered with many value sets.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
)

// request is one render: `kind` is "helm" or "kustomize". `files` are the package's UTF-8
// files; `binary` a chart's other files (base64 in the JSON, bytes once read), which Helm
// reads as they are.
type request struct {
	ID        uint64            `json:"id"`
	Kind      string            `json:"kind"`
	Key       string            `json:"key"`
	Files     map[string]string `json:"files,omitempty"`
	Binary    map[string][]byte `json:"binary,omitempty"`
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
	// No program is run and no remote base is fetched: with an empty PATH nothing can be
	// executed even if a code path tried (kustomize's git cloner runs `git`).
	_ = os.Setenv("PATH", "")
	// A render leaves mostly short-lived garbage over a small live set (the loaded charts):
	// a heap of five times the live set, not two, runs the collector far less often, which a
	// command rendering a fleet at once gains from. A long-lived caller that renders a few
	// tenants at a time and minds its memory more (the agent's Deployment) sets GOGC, which
	// is then left as Go reads it.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if err := serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fief-render-helper:", err)
		os.Exit(1)
	}
}

// serve answers requests until stdin closes. Requests are read in order, their files kept
// by key before the next line is read (so a later request may name the key alone), and
// rendered by one worker per core: answers go out as each render finishes, not in request
// order, and fief matches them by id. One process keeps every core busy on one copy of the
// loaded charts.
func serve(in io.Reader, out io.Writer) error {
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 1<<20), maxLine)
	answers := &answerWriter{writer: bufio.NewWriter(out)}
	answers.encoder = json.NewEncoder(answers.writer)
	answers.encoder.SetEscapeHTML(false)
	state := newStore()
	jobs := make(chan *request)
	var workers sync.WaitGroup
	for i := 0; i < runtime.GOMAXPROCS(0); i++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for req := range jobs {
				ans := state.handle(req)
				ans.ID = req.ID
				answers.write(&ans)
			}
		}()
	}
	for scanner.Scan() && answers.failed() == nil {
		req := &request{}
		if err := json.Unmarshal(scanner.Bytes(), req); err != nil {
			answers.write(&answer{Error: "the request is not JSON: " + err.Error()})
			continue
		}
		state.keep(req)
		jobs <- req
	}
	close(jobs)
	workers.Wait()
	if err := answers.failed(); err != nil {
		return err
	}
	return scanner.Err()
}

// answerWriter writes whole answer lines from concurrent workers; the first write error
// stops the helper.
type answerWriter struct {
	mu      sync.Mutex
	writer  *bufio.Writer
	encoder *json.Encoder
	err     error
}

func (w *answerWriter) write(ans *answer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	if w.err = w.encoder.Encode(ans); w.err == nil {
		w.err = w.writer.Flush()
	}
}

func (w *answerWriter) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// kustomizeBuilds serialises kustomize builds (see handle).
var kustomizeBuilds sync.Mutex

// handle dispatches one request by kind.
func (s *store) handle(req *request) answer {
	switch req.Kind {
	case "helm":
		return s.renderHelm(req)
	case "kustomize":
		// kustomize's builds share package state (its OpenAPI schema) that is not safe to
		// change from two goroutines: one build at a time.
		kustomizeBuilds.Lock()
		defer kustomizeBuilds.Unlock()
		return s.renderKustomize(req)
	default:
		return answer{Error: fmt.Sprintf("unknown kind %q (helm or kustomize)", req.Kind)}
	}
}

// versionLine names the pinned engines.
func versionLine() string {
	return fmt.Sprintf("fief-render-helper helm=%s kustomize-api=%s k8s=%s", helmVersion, kustomizeVersion, kubeVersion())
}
