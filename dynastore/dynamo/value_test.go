package dynamo

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

func TestValueRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		v    dynastore.Value
		av   types.AttributeValue
	}{
		{"binary", dynastore.B("\x00\xffk"), &types.AttributeValueMemberB{Value: []byte("\x00\xffk")}},
		{"empty binary", dynastore.B{}, &types.AttributeValueMemberB{Value: []byte{}}},
		{"number", dynastore.N("-12500"), &types.AttributeValueMemberN{Value: "-12500"}},
		{"string", dynastore.S("héllo"), &types.AttributeValueMemberS{Value: "héllo"}},
		{"binary set", dynastore.BS{[]byte("a"), []byte("\x00")}, &types.AttributeValueMemberBS{Value: [][]byte{[]byte("a"), []byte("\x00")}}},
		{"bool", dynastore.BOOL(true), &types.AttributeValueMemberBOOL{Value: true}},
		{"null", dynastore.NULL{}, &types.AttributeValueMemberNULL{Value: true}},
		{"empty list", dynastore.L{}, &types.AttributeValueMemberL{Value: []types.AttributeValue{}}},
		{"nested", dynastore.L{dynastore.M{"a": dynastore.N("1"), "b": dynastore.L{dynastore.S("x")}}, dynastore.B("y")},
			&types.AttributeValueMemberL{Value: []types.AttributeValue{
				&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
					"a": &types.AttributeValueMemberN{Value: "1"},
					"b": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "x"}}},
				}},
				&types.AttributeValueMemberB{Value: []byte("y")},
			}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			av, err := toAV(c.v)
			require.NoError(t, err)
			require.Equal(t, c.av, av)
			back, err := fromAV(av)
			require.NoError(t, err)
			require.Equal(t, c.v, back)
		})
	}
}

// Numbers come back in canonical form whatever text DynamoDB sends.
func TestNumbersCanonical(t *testing.T) {
	for in, want := range map[string]dynastore.N{"3.0": "3", "-3.50": "-3.5", "-12.5e3": "-12500", "0.0": "0", "1E+2": "100"} {
		v, err := fromAV(&types.AttributeValueMemberN{Value: in})
		require.NoError(t, err)
		require.Equal(t, want, v, in)
	}
}

func TestValueErrors(t *testing.T) {
	_, err := toAV(nil)
	require.ErrorIs(t, err, dynastore.ErrInvalid)
	_, err = toItem(dynastore.Item{{Name: "x", Value: dynastore.L{nil}}})
	require.ErrorIs(t, err, dynastore.ErrInvalid)
	_, err = fromAV(&types.AttributeValueMemberSS{Value: []string{"a"}})
	require.Error(t, err, "types redamo never writes are not converted silently")
	_, err = fromItem(map[string]types.AttributeValue{"x": &types.AttributeValueMemberNS{Value: []string{"1"}}})
	require.Error(t, err)
}

func TestFromItemMissing(t *testing.T) {
	it, err := fromItem(nil)
	require.NoError(t, err)
	require.Nil(t, it)
	it, err = fromItem(map[string]types.AttributeValue{})
	require.NoError(t, err)
	require.Nil(t, it)
}

func TestValidationKind(t *testing.T) {
	cases := []struct {
		msg  string
		want error
	}{
		{"Item size has exceeded the maximum allowed size", dynastore.ErrItemTooLarge},
		{"Item size to update has exceeded the maximum allowed size", dynastore.ErrItemTooLarge},
		{"Transaction payload size cannot exceed 4MB. Payload Size: 4290078", dynastore.ErrTxTooLarge},
		{"Hash primary key values must be under 2048 bytes, and range primary key values must be under 1024 bytes", dynastore.ErrKeyTooLarge},
		{"One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes", dynastore.ErrKeyTooLarge},
		{"One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes", dynastore.ErrKeyTooLarge},
		{"One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty binary value. Key: pk", dynastore.ErrKeyTooLarge},
		{"Invalid UpdateExpression: Incorrect operand type for operator or function; operator: ADD, operand type: STRING", dynastore.ErrInvalid},
		{"Transaction request cannot include multiple operations on one item", dynastore.ErrInvalid},
	}
	for _, c := range cases {
		require.Equal(t, c.want, validationKind(c.msg), c.msg)
	}
}
