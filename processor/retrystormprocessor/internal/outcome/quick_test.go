package outcome

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestFlagFree(t *testing.T) {
	free := []string{``, `plain text`, `{"content":[{"type":"text","text":"ok"}],"isError": false}`,
		`{"isError" :	false,"is_error":false}`}
	maybe := []string{`{"isError":true}`, `{"isError":"true"}`, `{"result":{"is_error": true}}`,
		`{"is\u0045rror":true}`, `"isError" then text`}
	for _, s := range free {
		assert.True(t, FlagFree(pcommon.NewValueStr(s)), s)
	}
	for _, s := range maybe {
		assert.False(t, FlagFree(pcommon.NewValueStr(s)), s)
	}
	m := pcommon.NewValueMap()
	m.Map().PutEmptyMap("result").PutBool("isError", true)
	assert.False(t, FlagFree(m), "a nested flag in a map")
	m.Map().PutEmptyMap("result").PutBool("isError", false)
	assert.True(t, FlagFree(m))
	assert.True(t, FlagFree(pcommon.NewValueInt(3)))
}
