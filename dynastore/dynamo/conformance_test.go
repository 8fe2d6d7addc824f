package dynamo_test

import (
	"testing"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/dynamo/dynamotest"
	"github.com/redamo/redamo/dynastore/storetest"
)

// TestConformance runs the shared suite on DynamoDB Local, each scenario on
// a fresh table (creating one takes milliseconds there).
func TestConformance(t *testing.T) {
	dynamotest.Endpoint(t)
	storetest.Run(t, func(t *testing.T) dynastore.Store {
		return dynamotest.NewStore(t, dynamo.Config{Observer: storetest.Observer(t)})
	})
}
