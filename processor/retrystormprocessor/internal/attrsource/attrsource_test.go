package attrsource

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRawKeys(t *testing.T) {
	assert.Equal(t, []string{"a", "b", "c"}, RawKeys([]string{"a#x", "b"}, []string{"a", "c#y.z", "b#w"}))
	assert.Empty(t, RawKeys())
	assert.Equal(t, []string{"a"}, RawKeys([]string{"event:gen_ai.tool.message:content", "a", "event:x:a#b"}),
		"an event entry names no span attribute to delete")
}

func TestParse(t *testing.T) {
	assert.Equal(t, Source{Key: "request", Path: []string{"params", "arguments"}}, Parse("request#params.arguments"))
	assert.Equal(t, Source{Key: "tool_name"}, Parse("tool_name"))
	assert.Equal(t, Source{Key: "tool_name"}, Parse("tool_name#"), "an empty path reads the whole attribute")
	assert.Equal(t, Source{Event: "gen_ai.tool.message", Key: "content"}, Parse("event:gen_ai.tool.message:content"))
	assert.Equal(t, Source{Event: "gen_ai.choice", Key: "message", Path: []string{"a", "b"}}, Parse("event:gen_ai.choice:message#a.b"))
	assert.Equal(t, Source{}, Parse("event:content"), "an event entry needs a name and a key")
	assert.Equal(t, Source{}, Parse("event::content"))
}

// Every list is validated under its configuration key.
func TestByKeyNamesEveryListByItsTag(t *testing.T) {
	l := Defaults()
	byKey := l.byKey()
	v := reflect.ValueOf(l)
	assert.Len(t, byKey, v.NumField())
	for i := range v.NumField() {
		tag := v.Type().Field(i).Tag.Get("mapstructure")
		list, ok := byKey[tag]
		if assert.True(t, ok, "no list named %q", tag) {
			assert.Equal(t, v.Field(i).Interface(), list, tag)
		}
	}
}

func TestValidateAt(t *testing.T) {
	l := Defaults()
	assert.NoError(t, l.ValidateAt("attributes"))
	l.Result = []string{"ok", " #x"}
	l.CallID = []string{""}
	l.ToolStatus = []string{"event:only_name"}
	assert.EqualError(t, l.ValidateAt("attributes"),
		"attributes.call_id[0] must name an attribute, got \"\"\nattributes.result[1] must name an attribute, got \" #x\"\n"+
			"attributes.tool_status[0] must name an attribute, got \"event:only_name\"")
}

func TestWithReadAsset(t *testing.T) {
	l := Defaults()
	assert.Equal(t, []string{"asset.read", DefaultReadAsset}, l.WithReadAsset("asset.read").ReadAsset)
	assert.Equal(t, []string{DefaultReadAsset}, l.WithReadAsset(DefaultReadAsset).ReadAsset, "listed once")
	assert.Equal(t, []string{DefaultReadAsset}, l.WithReadAsset("").ReadAsset)
	assert.Equal(t, []string{DefaultReadAsset}, l.ReadAsset, "l itself is unchanged")
}

func TestPayloadIsArgumentsResultIdempotencyKey(t *testing.T) {
	l := Defaults()
	assert.Equal(t, [][]string{l.Arguments, l.Result, l.IdempotencyKey}, l.Payload())
}
