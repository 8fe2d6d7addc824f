package dynamo_test

import (
	"testing"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/dynamo/dynamotest"
	"github.com/redamo/redamo/dynastore/storetest"
)

// TestConformance runs the shared suite on DynamoDB Local, each scenario on
// a fresh table (creating one takes milliseconds there), on the direct path
// and on the SDK client alone (what the store falls back to).
func TestConformance(t *testing.T) {
	dynamotest.Endpoint(t)
	for _, sdkOnly := range []bool{false, true} {
		name := "direct"
		if sdkOnly {
			name = "sdk"
		}
		t.Run(name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) dynastore.Store {
				return dynamotest.NewStore(t, dynamo.Config{Observer: storetest.Observer(t), SDKOnly: sdkOnly})
			})
		})
	}
}
