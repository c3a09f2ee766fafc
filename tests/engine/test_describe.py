"""The agent-facing type string (docs/engine.md, 'Type strings'), rendered from pydantic's JSON schema."""

from __future__ import annotations

import datetime
import enum
import ipaddress
import uuid
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import AnyUrl, BaseModel, EmailStr, Field, HttpUrl

from formctl.forms.describe import accepts_none, render_schema, type_string


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Empty(BaseModel):
    pass


class Pair(BaseModel):
    a: int
    b: str


class Seven(BaseModel):
    a: int
    b: int
    c: int
    d: int
    e: int
    f: int
    g: int


class Inner(BaseModel):
    b: int


class Outer(BaseModel):
    a: Inner


class Cat(BaseModel):
    k: Literal["cat"]


class Dog(BaseModel):
    k: Literal["dog"]
    n: int


class TreeNode(BaseModel):
    v: int
    kids: list[TreeNode] = []


class Titled(BaseModel):
    title: str
    cat: Cat = Field(description="described refs still resolve")


# --------------------------------------------------------------------------- strings


def test_plain_str_renders_text():
    assert type_string(str) == "text"


def test_email_renders_email_address():
    assert type_string(EmailStr) == "email address"


def test_email_format_overrides_a_length_constraint():
    assert render_schema({"type": "string", "format": "email", "minLength": 5}) == "email address"


def test_any_url_renders_url_despite_its_min_length():
    assert type_string(AnyUrl) == "URL"


def test_http_url_renders_url():
    assert type_string(HttpUrl) == "URL"


def test_uuid_renders_uuid():
    assert type_string(uuid.UUID) == "uuid"


def test_date_renders_with_its_format():
    assert type_string(datetime.date) == "date (YYYY-MM-DD)"


def test_datetime_renders_timestamp():
    assert type_string(datetime.datetime) == "timestamp (ISO 8601)"


def test_time_renders_with_its_format():
    assert type_string(datetime.time) == "time (HH:MM:SS)"


def test_timedelta_renders_duration():
    assert type_string(datetime.timedelta) == "duration (ISO 8601)"


def test_ip_addresses_render_their_version():
    assert type_string(ipaddress.IPv4Address) == "IPv4 address"
    assert type_string(ipaddress.IPv6Address) == "IPv6 address"


def test_a_pattern_renders_as_its_example_or_else_the_pattern():
    assert type_string(Annotated[str, Field(pattern=r"^a")]) == "text matching ^a"
    assert type_string(Annotated[str, Field(pattern=r"^[A-Z]{2}\d{4}$", examples=["AB1234"])]) == "text like AB1234"
    # an example the pattern refuses is no example; lengths are still said
    assert (
        type_string(Annotated[str, Field(pattern=r"^\d+$", examples=["x"], max_length=5)])
        == r"text matching ^\d+$ (max 5 chars)"
    )


def test_a_field_whose_own_words_give_an_example_reads_text_like_it():
    from formctl.forms.describe import field_type_string

    staff_id = Annotated[str, Field(pattern=r"^[A-Z]{2}\d{4}$")]
    assert field_type_string(staff_id, "Two capital letters and four digits, like AB1234.") == "text like AB1234"
    assert field_type_string(staff_id, "Ask for it (AB12 won't do).") == "text matching ^[A-Z]{2}\\d{4}$"
    assert field_type_string(staff_id) == "text matching ^[A-Z]{2}\\d{4}$"


def test_min_length_string_renders_min_chars():
    assert type_string(Annotated[str, Field(min_length=2)]) == "text (min 2 chars)"


def test_min_length_one_still_says_chars():
    assert type_string(Annotated[str, Field(min_length=1)]) == "text (min 1 chars)"


def test_min_length_zero_is_shown():
    assert render_schema({"type": "string", "minLength": 0}) == "text (min 0 chars)"


def test_max_length_string_renders_max_chars():
    assert type_string(Annotated[str, Field(max_length=5)]) == "text (max 5 chars)"


def test_min_and_max_length_render_a_range_with_an_en_dash():
    assert type_string(Annotated[str, Field(min_length=2, max_length=5)]) == "text (2\u20135 chars)"


def test_exact_length_renders_a_degenerate_range():
    assert render_schema({"type": "string", "minLength": 4, "maxLength": 4}) == "text (4\u20134 chars)"


def test_unknown_string_format_is_named_in_brackets():
    assert render_schema({"type": "string", "format": "cuid"}) == "text (cuid)"


def test_bytes_render_their_binary_format():
    assert type_string(bytes) == "text (binary)"


def test_length_wins_over_an_unknown_format():
    assert render_schema({"type": "string", "format": "cuid", "maxLength": 3}) == "text (max 3 chars)"


# --------------------------------------------------------------------------- numbers


def test_int_renders_integer():
    assert type_string(int) == "integer"


def test_float_renders_number():
    assert type_string(float) == "number"


def test_int_with_ge_renders_at_least():
    assert type_string(Annotated[int, Field(ge=1)]) == "integer >= 1"


def test_int_with_le_renders_at_most():
    assert type_string(Annotated[int, Field(le=5)]) == "integer <= 5"


def test_int_with_both_bounds_renders_between():
    assert type_string(Annotated[int, Field(ge=0, le=5)]) == "integer between 0 and 5"


def test_float_with_gt_renders_exclusive_lower_bound():
    assert type_string(Annotated[float, Field(gt=0)]) == "number > 0"


def test_float_with_lt_renders_exclusive_upper_bound():
    assert type_string(Annotated[float, Field(lt=100)]) == "number < 100"


def test_exclusive_bounds_on_both_sides_do_not_show_exclusivity():
    assert type_string(Annotated[float, Field(gt=0, lt=1)]) == "number between 0 and 1"


def test_float_bounds_print_like_javascript():
    assert type_string(Annotated[float, Field(ge=1.0, le=10.0)]) == "number between 1 and 10"
    assert type_string(Annotated[float, Field(ge=0.5)]) == "number >= 0.5"


def test_int32_range_renders_between():
    int32 = Annotated[int, Field(ge=-2147483648, le=2147483647)]
    assert type_string(int32) == "integer between -2147483648 and 2147483647"


def test_js_safe_integer_bounds_are_uninformative():
    node = {"type": "integer", "minimum": -9007199254740991, "maximum": 9007199254740991}
    assert render_schema(node) == "integer"


def test_a_safe_integer_bound_gives_way_to_the_other_key():
    node = {"type": "number", "exclusiveMinimum": -9007199254740991, "minimum": 3}
    assert render_schema(node) == "number >= 3"


def test_exclusive_minimum_wins_over_minimum():
    assert render_schema({"type": "number", "exclusiveMinimum": 0, "minimum": 5}) == "number > 0"


def test_large_floats_print_in_javascript_exponent_form():
    assert render_schema({"type": "number", "maximum": 3.4028234663852886e38}) == "number <= 3.4028234663852886e+38"
    assert render_schema({"type": "number", "minimum": 1e21}) == "number >= 1e+21"
    assert render_schema({"type": "number", "minimum": 1e20}) == "number >= 100000000000000000000"


def test_small_floats_print_like_javascript():
    assert render_schema({"type": "number", "minimum": 1e-6}) == "number >= 0.000001"
    assert render_schema({"type": "number", "minimum": 1e-7}) == "number >= 1e-7"


def test_multiple_of_is_ignored():
    assert type_string(Annotated[int, Field(multiple_of=5)]) == "integer"


def test_bool_renders_true_or_false():
    assert type_string(bool) == "true or false"


# --------------------------------------------------------------------------- literals and enums


def test_single_str_literal_renders_exactly():
    assert type_string(Literal["x"]) == "exactly x"


def test_int_literal_renders_exactly_the_number():
    assert type_string(Literal[5]) == "exactly 5"


def test_bool_literal_renders_exactly_true():
    assert type_string(Literal[True]) == "exactly true"


def test_multi_value_literal_renders_one_of():
    assert type_string(Literal["a", "b"]) == "one of: a | b"


def test_str_enum_renders_its_values():
    assert type_string(Colour) == "one of: red | green"


def test_int_enum_renders_its_values():
    assert type_string(Priority) == "one of: 1 | 2"


def test_union_of_literals_renders_each_branch():
    assert type_string(Union[Literal["a"], Literal["b"]]) == "exactly a or exactly b"


def test_enum_values_other_than_strings_are_json_encoded():
    assert render_schema({"enum": ["a", 1, 2.0, True, None, [1, "x"]]}) == 'one of: a | 1 | 2 | true | null | [1,"x"]'


def test_const_null_renders_exactly_null():
    assert render_schema({"const": None}) == "exactly null"


def test_const_false_and_zero_still_render():
    assert render_schema({"const": False}) == "exactly false"
    assert render_schema({"const": 0}) == "exactly 0"


def test_enum_is_checked_before_type():
    assert render_schema({"type": "string", "enum": ["a", "b"]}) == "one of: a | b"


def test_a_one_value_enum_reads_as_exactly_that_value():
    # pydantic before 2.10 writes Literal["a"] as an enum of one, later ones as a const
    assert render_schema({"type": "string", "enum": ["a"]}) == "exactly a"


def test_empty_enum_falls_through_to_type():
    assert render_schema({"type": "string", "enum": []}) == "text"


# --------------------------------------------------------------------------- unions and optionality


def test_optional_int_renders_from_its_non_none_part():
    assert type_string(Annotated[int, Field(ge=1)] | None) == "integer >= 1"


def test_optional_str_renders_text():
    assert type_string(Optional[str]) == "text"


def test_optional_bool_renders_true_or_false():
    assert type_string(bool | None) == "true or false"


def test_optional_enum_renders_its_values():
    assert type_string(Colour | None) == "one of: red | green"


def test_literal_with_none_renders_the_other_values():
    assert type_string(Literal["a", "b", None]) == "one of: a | b"
    assert type_string(Literal["a", None]) == "exactly a"


def test_union_of_str_and_int_renders_both():
    assert type_string(str | int) == "text or integer"


def test_optional_union_drops_only_the_null_branch():
    assert type_string(str | int | None) == "text or integer"


def test_optional_discriminated_union_renders_its_models():
    animal = Annotated[Cat | Dog, Field(discriminator="k")]
    assert type_string(Optional[animal]) == "object with: k or object with: k, n"


def test_optional_nested_list_renders_at_the_top_depth():
    assert type_string(list[list[list[str]]] | None) == "list of list of list of text"


def test_none_inside_a_list_item_keeps_may_be_empty():
    assert type_string(list[str | None]) == "list of text (may be empty)"


def test_nullable_union_below_the_top_keeps_may_be_empty():
    assert (
        render_schema({"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "null"}]})
        == "text or number (may be empty)"
    )


def test_nullable_with_bounds_below_the_top_keeps_may_be_empty():
    node = {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]}
    assert render_schema(node) == "integer >= 1 (may be empty)"


def test_any_of_only_nulls_renders_empty():
    assert render_schema({"anyOf": [{"type": "null"}, {"type": "null"}]}) == "empty"


def test_none_type_renders_empty():
    assert type_string(type(None)) == "empty"


def test_literal_none_renders_exactly_null():
    assert type_string(Literal[None]) == "exactly null"


def test_one_of_is_used_when_any_of_is_absent():
    assert render_schema({"oneOf": [{"type": "string"}, {"type": "boolean"}]}) == "text or true or false"


def test_any_renders_value():
    assert type_string(Any) == "value"


def test_all_of_renders_value():
    assert render_schema({"allOf": [{"type": "string"}, {"minLength": 1}]}) == "value"


def test_unresolved_ref_renders_value():
    assert render_schema({"$ref": "#/$defs/X"}) == "value"


def test_list_valued_type_renders_value():
    assert render_schema({"type": ["string", "null"]}) == "value"


def test_literal_true_schema_renders_value():
    assert render_schema(True) == "value"


def test_non_dict_node_renders_value():
    assert render_schema("string") == "value"
    assert render_schema(None) == "value"


def test_a_renderer_error_falls_back_to_value():
    class Exploding(dict):
        def get(self, *args):
            raise RuntimeError("boom")

    assert render_schema(Exploding()) == "value"


def test_an_annotation_pydantic_cannot_describe_renders_value():
    class Opaque:
        pass

    assert type_string(Opaque) == "value"


# --------------------------------------------------------------------------- arrays


def test_list_renders_list_of_its_items():
    assert type_string(list[str]) == "list of text"


def test_list_of_int_renders_list_of_integer():
    assert type_string(list[int]) == "list of integer"


def test_list_with_min_items_renders_at_least():
    assert type_string(Annotated[list[str], Field(min_length=1)]) == "list of text (at least 1)"


def test_list_with_max_items_renders_at_most():
    assert type_string(Annotated[list[str], Field(max_length=3)]) == "list of text (at most 3)"


def test_list_with_min_and_max_items_renders_a_range():
    assert type_string(Annotated[list[str], Field(min_length=1, max_length=3)]) == "list of text (1\u20133)"


def test_min_items_zero_alone_shows_nothing():
    assert type_string(Annotated[list[str], Field(min_length=0)]) == "list of text"


def test_max_items_zero_is_shown():
    assert render_schema({"type": "array", "items": {"type": "string"}, "maxItems": 0}) == "list of text (at most 0)"


def test_four_deep_lists_stop_naming_items_at_depth_three():
    assert type_string(list[list[list[list[str]]]]) == "list of list of list of list of value"


def test_list_of_model_renders_its_keys():
    class A(BaseModel):
        a: int

    assert type_string(list[A]) == "list of object with: a"


def test_list_of_list_of_model_hides_the_keys():
    assert type_string(list[list[Outer]]) == "list of list of object"


def test_set_renders_as_a_list():
    assert type_string(set[int]) == "list of integer"


def test_fixed_tuple_renders_list_of_value():
    assert type_string(tuple[int, str]) == "list of value"


def test_variadic_tuple_renders_its_item_type():
    assert type_string(tuple[int, ...]) == "list of integer"


def test_array_without_items_renders_list_of_value():
    assert render_schema({"type": "array"}) == "list of value"


# --------------------------------------------------------------------------- objects


def test_model_with_no_fields_renders_object():
    assert type_string(Empty) == "object"


def test_model_with_two_fields_lists_them_in_order():
    assert type_string(Pair) == "object with: a, b"


def test_model_with_seven_fields_lists_six_then_an_ellipsis():
    assert type_string(Seven) == "object with: a, b, c, d, e, f, \u2026"


def test_nested_model_lists_only_the_outer_keys():
    assert type_string(Outer) == "object with: a"


def test_dict_renders_object():
    assert type_string(dict[str, int]) == "object"


def test_objects_at_depth_two_hide_their_keys():
    assert render_schema({"type": "object", "properties": {"a": {}}}, depth=2) == "object"


def test_discriminated_union_renders_each_model():
    animal = Annotated[Cat | Dog, Field(discriminator="k")]
    assert type_string(animal) == "object with: k or object with: k, n"


def test_recursive_model_renders_without_looping():
    assert type_string(TreeNode) == "object with: v, kids"
    assert type_string(list[TreeNode]) == "list of object with: v, kids"


def test_titles_are_ignored_but_a_property_named_title_is_kept():
    assert type_string(Titled) == "object with: title, cat"


def test_a_described_model_field_resolves_its_ref():
    assert type_string(list[Titled]) == "list of object with: title, cat"


def test_a_single_ref_all_of_is_a_reference_not_an_intersection():
    # Older pydantic wraps a described model field as allOf: [{$ref}]; only a real
    # intersection should fall back to "value".
    from formctl.forms.describe import _resolve_refs

    schema = {
        "type": "array",
        "items": {"allOf": [{"$ref": "#/$defs/Pair"}], "description": "a pair"},
        "$defs": {"Pair": {"type": "object", "properties": {"a": {}, "b": {}}}},
    }
    assert render_schema(_resolve_refs(schema)) == "list of object with: a, b"


# --------------------------------------------------------------------------- requiredness probe
# A field is optional iff its schema accepts None; there is no required= flag.


def test_a_plain_type_does_not_accept_none():
    assert accepts_none(int) is False


def test_an_optional_type_accepts_none():
    assert accepts_none(Annotated[int, Field(ge=1)] | None) is True


def test_any_accepts_none():
    assert accepts_none(Any) is True


def test_a_probe_that_raises_counts_as_not_accepting_none():
    class Opaque:
        pass

    assert accepts_none(Opaque) is False


def test_unhashable_annotations_are_rendered_without_caching():
    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        def __get_pydantic_core_schema__(self, source, handler):
            return handler(int)

    annotation = Annotated[int, Unhashable()]
    assert type_string(annotation) == "integer"
    assert accepts_none(annotation) is False
