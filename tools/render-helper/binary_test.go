// A chart's files that are not UTF-8 text, sent as base64 beside the text files: read by
// the chart as bytes (`.Files.Get`, `.Files.GetBytes`), left out when `.helmignore` names
// them, and a rendered manifest that is not UTF-8 refused naming its template.
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// icon is a file that is not UTF-8: a PNG signature, a NUL and bytes no UTF-8 text holds.
var icon = []byte{0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0xfe}

const binaryTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: icon
binaryData:
  got: {{ .Files.Get "files/icon.png" | b64enc }}
  bytes: {{ .Files.GetBytes "files/icon.png" | toString | b64enc }}
data:
  count: "{{ len (.Files.Glob "files/*") }}"
  size: "{{ len (.Files.GetBytes "files/icon.png") }}"
`
const secretTemplate = `apiVersion: v1
kind: Secret
metadata:
  name: icon
data:
{{ (.Files.Glob "files/*").AsSecrets | indent 2 }}
`

// serveOne is the helper's answer to one request line.
func serveOne(t *testing.T, req map[string]interface{}) answer {
	t.Helper()
	line, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := serve(bytes.NewReader(append(line, '\n')), &out); err != nil {
		t.Fatal(err)
	}
	var ans answer
	if err := json.Unmarshal(out.Bytes(), &ans); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	return ans
}

func chartRequest(text map[string]string, binary map[string]string) map[string]interface{} {
	text["Chart.yaml"] = "apiVersion: v2\nname: c\nversion: 0.1.0\n"
	return map[string]interface{}{
		"id": 1, "kind": "helm", "key": "k", "namespace": "n", "release": "r",
		"files": text, "binary": binary,
	}
}

func TestBinaryFilesReachTheChartAsTheirBytes(t *testing.T) {
	encoded := base64.StdEncoding.EncodeToString(icon)
	ans := serveOne(t, chartRequest(
		map[string]string{"templates/cm.yaml": binaryTemplate, "templates/secret.yaml": secretTemplate},
		map[string]string{"files/icon.png": encoded},
	))
	if ans.Error != "" || len(ans.Documents) != 2 {
		t.Fatalf("%+v", ans)
	}
	text := ans.Documents[0].Text + ans.Documents[1].Text
	wants := []string{"got: " + encoded, "bytes: " + encoded, `count: "1"`, `size: "11"`, "icon.png: " + encoded}
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in:\n%s", want, text)
		}
	}
}

func TestHelmignoredBinaryFilesAreNotLoaded(t *testing.T) {
	ans := serveOne(t, chartRequest(
		map[string]string{"templates/cm.yaml": binaryTemplate, ".helmignore": "*.png\n"},
		map[string]string{"files/icon.png": base64.StdEncoding.EncodeToString(icon)},
	))
	if ans.Error != "" || len(ans.Documents) != 1 {
		t.Fatalf("%+v", ans)
	}
	text := ans.Documents[0].Text
	if !strings.Contains(text, `count: "0"`) || !strings.Contains(text, "got: \n") {
		t.Errorf("the ignored file was loaded:\n%s", text)
	}
}

func TestAManifestThatIsNotUTF8IsRefusedNamingIt(t *testing.T) {
	req := chartRequest(
		map[string]string{},
		map[string]string{"crds/w.yaml": base64.StdEncoding.EncodeToString([]byte("# caf\xe9\nkind: Widget\n"))},
	)
	req["includeCrds"] = true
	ans := serveOne(t, req)
	if !strings.Contains(ans.Error, "c/crds/w.yaml is not UTF-8") {
		t.Fatalf("%+v", ans)
	}
}

func TestAByteOrderMarkIsCutAsHelmsLoadersCutIt(t *testing.T) {
	ans := serveOne(t, chartRequest(
		map[string]string{
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ .Files.Get \"files/a.txt\" | quote }}\n",
			"files/a.txt":       "\ufeffhello",
		},
		nil,
	))
	if ans.Error != "" || !strings.Contains(ans.Documents[0].Text, `a: "hello"`) {
		t.Fatalf("%+v", ans)
	}
}
