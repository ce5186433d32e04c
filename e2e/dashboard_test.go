package e2e

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGrafanaDashboard checks docs/grafana-dashboard.json: valid JSON, panels
// that fit the grid with unique ids, and queries over documented metrics only.
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile("../docs/grafana-dashboard.json")
	require.NoError(t, err)
	doc, err := os.ReadFile("../docs/metrics.md")
	require.NoError(t, err)

	var dash struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			ID      int                      `json:"id"`
			Type    string                   `json:"type"`
			Title   string                   `json:"title"`
			GridPos struct{ H, W, X, Y int } `json:"gridPos"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(data, &dash))
	require.NotEmpty(t, dash.Title)
	require.NotEmpty(t, dash.UID)
	require.NotEmpty(t, dash.Panels)

	metricName := regexp.MustCompile(`\b(fluss_gateway_[a-z_]+|process_[a-z_]+|go_[a-z_]+)\b`)
	ids := map[int]string{}
	used := map[string]bool{}
	for _, p := range dash.Panels {
		other, dup := ids[p.ID]
		require.False(t, dup, "panel id %d used by %q and %q", p.ID, other, p.Title)
		ids[p.ID] = p.Title
		assert.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, "panel %q is wider than the grid", p.Title)
		assert.Positive(t, p.GridPos.H, "panel %q", p.Title)
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			names := metricName.FindAllString(tg.Expr, -1)
			require.NotEmpty(t, names, "panel %q: query %q names no metric", p.Title, tg.Expr)
			for _, n := range names {
				base := n
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(n, suffix); ok {
						base = b
					}
				}
				used[base] = true
				assert.Contains(t, string(doc), base, "panel %q uses %s, which docs/metrics.md does not list", p.Title, n)
			}
		}
	}
	// The dashboard covers every metric family of the gateway's own subsystems.
	for _, m := range regexp.MustCompile("`(fluss_gateway_[a-z_]+)`").FindAllStringSubmatch(string(doc), -1) {
		assert.True(t, used[m[1]], "docs/metrics.md lists %s but no dashboard panel shows it", m[1])
	}
}
