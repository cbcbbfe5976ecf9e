package verdict

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestToolNameLabelsAreValidUTF8(t *testing.T) {
	tn := &toolNames{limit: 10}
	assert.Equal(t, "pay\uFFFDnow", tn.bound("pay\xffnow"))
	assert.Equal(t, toolUnknown, tn.bound(""))
}
