"""The guided model's value readers (agent/models/guided/values/, issue 37): a person's everyday
words read into each field's type, with what else the line said kept to be said back. The
issue's examples, and other ways people say the same things."""

from __future__ import annotations

from datetime import date

import pytest

from formctl.agent.models.guided.values import (
    Kind,
    ReadingContext,
    UnreadableAnswer,
    confirmation,
    find_by_shape,
    locale_from_env,
    normalise_locale,
    read_value,
    yes_no,
)

GB = ReadingContext("en-GB")
US = ReadingContext("en-US")
NO_LOCALE = ReadingContext(None)
AFTER_19_MARCH = ReadingContext("en-GB", date(2026, 3, 19))
STARTED_IN_DECEMBER = ReadingContext("en-GB", started=date(2026, 12, 6))
AFTER_30_DECEMBER = ReadingContext("en-GB", date(2026, 12, 30), started=date(2026, 12, 6))
MODE = Kind(
    "choice",
    ("car", "rail", "air"),
    aliases=(("car", ("drove", "drive", "my car")), ("rail", ("train", "by train")), ("air", ("flew", "plane"))),
)
CLIENT = Kind(
    "choice",
    ("new", "returning"),
    aliases=(("new", ("no", "first time", "never been", "not been")), ("returning", ("yes", "been before"))),
)
REFERRAL = Kind(
    "choice",
    ("web", "friend", "doctor", "other"),
    aliases=(("web", ("google", "online")), ("friend", ("a friend", "neighbour")), ("doctor", ("gp", "my gp"))),
)


def value(kind: Kind | str, text: str, ctx: ReadingContext = GB):
    return read_value(Kind(kind) if isinstance(kind, str) else kind, text, ctx).value


@pytest.mark.parametrize(
    ("text", "ctx", "day"),
    [
        ("Monday 6 April 2026", GB, "2026-04-06"),
        ("Tuesday 10 March 2026", GB, "2026-03-10"),
        ("on the 9th of March 2026", GB, "2026-03-09"),
        ("March 9th, 2026", GB, "2026-03-09"),
        ("I left on Mon 9 Mar 2026", GB, "2026-03-09"),
        ("2026-03-09", NO_LOCALE, "2026-03-09"),
        ("09/03/2026", GB, "2026-03-09"),
        ("03/09/2026", US, "2026-03-09"),
        ("25/12/2026", NO_LOCALE, "2026-12-25"),  # only one order is a date
        ("the next day, 20 March", AFTER_19_MARCH, "2026-03-20"),
        ("the next day", AFTER_19_MARCH, "2026-03-20"),
        ("same day", AFTER_19_MARCH, "2026-03-19"),
        ("came back the same day", AFTER_19_MARCH, "2026-03-19"),
        ("two days later", AFTER_19_MARCH, "2026-03-21"),
        ("a week later", AFTER_19_MARCH, "2026-03-26"),
        ("on the 23rd", AFTER_19_MARCH, "2026-03-23"),
        ("the 2nd", AFTER_19_MARCH, "2026-04-02"),  # the next 2nd after 19 March
        ("20 March", AFTER_19_MARCH, "2026-03-20"),  # the year of the date before it
        ("9 March", STARTED_IN_DECEMBER, "2026-03-09"),  # the year the form was started in
        ("2 January", AFTER_30_DECEMBER, "2027-01-02"),  # the year nearest the date before it
        ("Monday 9 March", ReadingContext("en-GB", started=date(2030, 1, 1)), "2026-03-09"),  # a Monday then
        ("I came back on 5 March 2026, not the 4th", GB, "2026-03-05"),
        ("got back Wednesday", ReadingContext("en-GB", date(2026, 3, 9)), "2026-03-11"),  # the next Wednesday
        ("the following Monday", ReadingContext("en-GB", date(2026, 3, 9)), "2026-03-16"),
        ("two days after", AFTER_19_MARCH, "2026-03-21"),
    ],
)
def test_dates_people_write_are_read(text, ctx, day):
    assert value("date", text, ctx) == day


def test_a_date_read_from_the_one_before_it_is_said_back_as_the_date_it_makes():
    reading = read_value(Kind("date"), "the next day", AFTER_19_MARCH)
    assert reading.said_as == "Friday 20 March 2026"
    assert reading.note == 'I read "the next day" as Friday 20 March 2026.'


@pytest.mark.parametrize(
    ("text", "ctx", "reason"),
    [
        ("Monday 10 March 2026", GB, "10 March 2026 is a Tuesday. Which did you mean?"),
        ("03/11/2026", NO_LOCALE, "day/month or month/day"),
        ("20 March", GB, "Which year"),
        ("same day", GB, "after which date"),
        ("the 11th", GB, "Which month"),
        ("31 February 2026", GB, "not a real date"),
        ("tomorrow", GB, "the date itself"),
        ("3 March 2026 or 4 March 2026", GB, "which date you mean"),
        ("the next day, 22 March", AFTER_19_MARCH, "which date you mean"),
        ("sometime in spring", GB, "I need a date"),
        ("I sat on the train", GB, "I need a date"),  # "sat" is not Saturday
        ("Wednesday", GB, "Which Wednesday"),
    ],
)
def test_a_date_that_cannot_be_placed_is_asked_again(text, ctx, reason):
    with pytest.raises(UnreadableAnswer, match=reason):
        read_value(Kind("date"), text, ctx)


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        ("12 pounds 40", 12.4),
        ("12 pounds and 40p", 12.4),
        ("about 210, exactly 212.40", 212.4),
        ("roughly 60, actually 58.75", 58.75),
        ("yep, £150", 150),
        ("£1,234.56", 1234.56),
        ("45 quid", 45),
        ("forty-one", 41),
        ("forty five pounds", 45),
        ("it came to £88.20 in total", 88.2),
        ("50p", 0.5),
        ("0", 0),
    ],
)
def test_amounts_people_write_are_read(text, amount):
    assert value("number", text) == amount


def test_a_decimal_comma_is_read_where_the_locale_writes_one():
    assert value("number", "12,40", ReadingContext("de-DE")) == 12.4
    assert value("number", "1,240", GB) == 1240


@pytest.mark.parametrize("text", ["nope, no hotel", "I stayed with friends, so nothing", "nothing", "no", "none"])
def test_words_that_say_there_is_no_amount_read_as_none(text):
    assert read_value(Kind("number"), text, GB).none


@pytest.mark.parametrize(
    ("text", "age"),
    [
        ("45", 45),
        ("I'm 45", 45),
        ("45 years old", 45),
        ("forty-one", 41),
        ("I'm forty one", 41),
        ("just turned 30", 30),
    ],
)
def test_ages_are_read(text, age):
    assert value("integer", text) == age


@pytest.mark.parametrize(
    "text", ["I'll be 18 in June", "turning 18 next month", "I will be 18 soon", "I was born in 1990"]
)
def test_a_number_that_is_not_now_is_not_the_answer(text):
    with pytest.raises(UnreadableAnswer, match="not what it is now"):
        read_value(Kind("integer"), text, GB)


def test_the_number_that_is_now_is_taken_beside_one_that_is_not():
    reading = read_value(Kind("integer"), "I'm 17, 18 in June", GB)
    assert reading.value == 17


@pytest.mark.parametrize(
    "text", ["1.2k", "2m", "1.5 thousand", "between 40 and 50", "40 or 50", "a few hundred", "hundreds"]
)
def test_an_amount_that_is_not_one_figure_is_refused(text):
    with pytest.raises(UnreadableAnswer):
        read_value(Kind("number"), text, GB)


@pytest.mark.parametrize(
    ("text", "ctx", "phone"),
    [
        ("My mobile is 07700 900982 if that helps", GB, "07700 900982"),
        ("My mobile is 07700 900982 if that helps", NO_LOCALE, "07700 900982"),
        ("Actually I've found it, my new mobile is 07700 900555", GB, "07700 900555"),
        ("+44 7700 900555", NO_LOCALE, "+44 7700 900555"),
        ("call me on (0161) 496 0000 after 5", GB, "(0161) 496 0000"),
        ("07700900982", GB, "07700900982"),
    ],
)
def test_a_phone_number_is_taken_out_of_its_sentence(text, ctx, phone):
    reading = read_value(Kind("phone"), text, ctx)
    assert reading.value == phone


def test_what_else_a_line_says_beside_a_value_is_kept_to_say_back():
    reading = read_value(Kind("phone"), "Actually I've found it, my new mobile is 07700 900555", GB)
    assert reading.rest == ("Actually I've found it",)
    assert read_value(Kind("phone"), "My mobile is 07700 900982 if that helps", GB).rest == ()
    assert read_value(Kind("number"), "£60, that was for two dinners", GB).rest == ("that was for two dinners",)
    assert read_value(Kind("date"), "got back Wednesday", ReadingContext("en-GB", date(2026, 3, 9))).rest == ()


@pytest.mark.parametrize(
    ("kind", "text", "rest"),
    [
        (MODE, "we flew to Glasgow", ("to Glasgow",)),  # a name: said back
        (MODE, "train, ticket ref TR-20931", ("ticket ref TR-20931",)),  # a figure: said back
        (MODE, "I took the train down", ()),  # a few plain words only go with the answer
        (REFERRAL, "my GP sent me", ()),
        (Kind("boolean"), "yes, I have moved house", ("I have moved house",)),
        (Kind("boolean"), "No, all the same", ()),
    ],
)
def test_beside_a_choice_or_a_yes_what_says_something_of_its_own_is_kept(kind, text, rest):
    assert read_value(kind, text, GB).rest == rest


@pytest.mark.parametrize(
    "text", ["I don't have a phone at the moment", "not sure of my new number yet, can we skip it?", "why?"]
)
def test_a_sentence_without_a_number_is_not_a_phone_number(text):
    with pytest.raises(UnreadableAnswer, match="I need a phone number"):
        read_value(Kind("phone"), text, GB)


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("booking ref is QX7RTA", "QX7RTA"),
        ("it's TR-88321 on the ticket", "TR-88321"),
        ("qx7rta", "qx7rta"),
        ("TR 88321", "TR 88321"),
        ("booking ref is TR 88321", "TR 88321"),
        ("ref 88321", "88321"),
    ],
)
def test_a_reference_is_taken_out_of_its_sentence(text, ref):
    assert value("reference", text) == ref


@pytest.mark.parametrize(
    ("text", "option"), [("nope", "new"), ("nah", "new"), ("yep", "returning"), ("Yeah!", "returning")]
)
def test_a_plain_yes_or_no_names_the_option_the_author_gave_yes_or_no_as_an_alias(text, option):
    assert read_value(CLIENT, text, GB).value == option


VISITED = Kind(
    "choice", ("new", "returning"), aliases=(("new", ("no", "first time")), ("returning", ("yes", "here before")))
)


@pytest.mark.parametrize(
    ("text", "option"),
    [("I wasn't here before", "new"), ("it's not my first time", "returning"), ("I was here before", "returning")],
)
def test_one_side_of_a_yes_no_choice_said_after_not_names_the_other(text, option):
    assert read_value(VISITED, text, GB).value == option


def test_an_option_said_after_not_names_nothing_in_a_choice_that_is_not_yes_or_no():
    with pytest.raises(UnreadableAnswer, match="I need one of"):
        read_value(MODE, "not by car", GB)


def test_a_plain_yes_or_no_names_nothing_where_no_option_has_yes_or_no_as_an_alias():
    with pytest.raises(UnreadableAnswer, match="I need one of"):
        read_value(MODE, "nope", GB)


@pytest.mark.parametrize(
    ("text", "day", "note"),
    [
        ("the third of November", "2026-11-03", 'I read "third of November" as Tuesday 3 November 2026.'),
        ("november the twenty-first", "2026-11-21", 'I read "november the twenty-first" as Saturday 21 November 2026.'),
        ("on the thirty first of December 2026", "2026-12-31", None),
        ("twelfth of March, I think", "2026-03-12", 'I read "twelfth of March" as Thursday 12 March 2026.'),
    ],
)
def test_a_day_said_in_words_is_read_as_its_figure(text, day, note):
    reading = read_value(Kind("date"), text, STARTED_IN_DECEMBER)
    assert (reading.value, reading.note) == (day, note)


def test_a_day_said_in_words_is_read_from_the_date_before_it():
    assert read_value(Kind("date"), "the fifth.", AFTER_30_DECEMBER).value == "2027-01-05"


def test_an_ordinal_beside_no_month_is_not_a_day():
    with pytest.raises(UnreadableAnswer, match="I need a date"):
        read_value(Kind("date"), "my first trip", STARTED_IN_DECEMBER)


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("dana at example dot org", "dana@example.org"),
        ("it's dana dot reeve (at) example (dot) co (dot) uk", "dana.reeve@example.co.uk"),
    ],
)
def test_an_address_said_aloud_is_read_and_said_back(text, address):
    reading = read_value(Kind("email"), text, GB)
    assert (reading.value, reading.note) == (address, f'I read "{text}" as {address}.')


def test_words_with_at_and_dot_that_make_no_address_are_left_for_the_engine():
    assert read_value(Kind("email"), "meet me at the station dot", GB).value == "meet me at the station dot"


STAFF_ID = Kind("text", pattern=r"^[A-Z]{2}\d{4}$")


@pytest.mark.parametrize(
    ("kind", "text", "read"),
    [
        (STAFF_ID, "AB1234", "AB1234"),
        (STAFF_ID, "ab1234", "AB1234"),
        (STAFF_ID, "Ab1234", "AB1234"),
        (STAFF_ID, "AB 1234", "AB1234"),
        (STAFF_ID, "ab - 1234", "AB1234"),
        (STAFF_ID, "'ab1234'", "AB1234"),
        (STAFF_ID, "my staff id is AB 1234", "AB1234"),
        (STAFF_ID, "it's ab-1234.", "AB1234"),
        (Kind("text", pattern=r"^[a-z]{3}-\d{2}$"), "ABC-12", "abc-12"),  # the dash is the pattern's own
    ],
)
def test_a_code_is_read_in_the_case_and_without_the_gaps_its_pattern_takes(kind, text, read):
    assert read_value(kind, text, GB).value == read


@pytest.mark.parametrize("text", ["dana", "ab12", "AB 12 34 5", "ab1234 or cd5678"])
def test_words_no_form_of_which_fits_the_pattern_are_left_as_written(text):
    assert read_value(STAFF_ID, text, GB).value == text  # the engine refuses them, in the field's words


def test_a_word_of_letters_only_is_never_read_as_a_code_in_capitals_but_a_token_with_a_figure_is():
    fields = {"code": Kind("text", pattern=r"^[A-Z]{4}$"), "staff_id": STAFF_ID}
    assert find_by_shape("my name is dana", fields, GB) == []
    assert [(f, r.value) for f, r in find_by_shape("dana, staff id ab1234", fields, GB)] == [("staff_id", "AB1234")]


@pytest.mark.parametrize(("text", "reason"), [("not sure", "the reference itself"), ("QX7RTA or QX7RTB", "which")])
def test_words_that_hold_no_one_reference_are_not_stored_as_one(text, reason):
    with pytest.raises(UnreadableAnswer, match=reason):
        read_value(Kind("reference"), text, GB)


@pytest.mark.parametrize(
    ("kind", "text", "option"),
    [
        (MODE, "train", "rail"),
        (MODE, "I drove", "car"),
        (MODE, "flew", "air"),
        (MODE, "drove there", "car"),
        (MODE, "we took the train down", "rail"),
        (MODE, "not by car, by train", "rail"),
        (MODE, "trian", "rail"),
        (MODE, "Rail", "rail"),
        (CLIENT, "No, this is my first time", "new"),
        (CLIENT, "first time here", "new"),
        (CLIENT, "I've never been", "new"),
        (CLIENT, "yes, I've been before", "returning"),
        (REFERRAL, "my GP sent me", "doctor"),
        (REFERRAL, "found you on Google", "web"),
        (REFERRAL, "my neighbour told me", "friend"),
    ],
)
def test_a_choice_is_read_by_its_name_its_aliases_or_a_misspelling(kind, text, option):
    assert value(kind, text) == option


@pytest.mark.parametrize(("text", "reason"), [("car or train", "which you mean"), ("boat", "I need one of")])
def test_a_choice_that_names_two_options_or_none_is_asked_again(text, reason):
    with pytest.raises(UnreadableAnswer, match=reason):
        read_value(MODE, text, GB)


@pytest.mark.parametrize(
    ("text", "answer", "rest"),
    [
        ("No, this is my first time", False, "this is my first time"),
        ("yep, £150", True, "£150"),
        ("nope, no hotel", False, "no hotel"),
        ("Yes please", True, ""),
        ("not really", False, ""),
        ("first time here", None, "first time here"),
        ("Nobody told me", None, "Nobody told me"),  # "no" only as a word of its own
    ],
)
def test_yes_or_no_at_the_start_of_a_line_and_the_rest(text, answer, rest):
    assert yes_no(text) == (answer, rest)


@pytest.mark.parametrize(
    ("text", "kind", "given"),
    [
        ("yes", "yes", ""),
        ("Yes, that's right", "yes", ""),
        ("correct", "yes", ""),
        ("The correct one is CD5678", "correction", "CD5678"),
        ("yes, but it is actually AB9999", "correction", "AB9999"),
        ("right, 300", "correction", "300"),
        ("no, it's CD5678", "correction", "CD5678"),
        ("Actually it should be 5 March", "correction", "5 March"),
        ("no", "no", ""),
        ("No, I don't have one", "no", ""),
        ("none", "no", ""),
        ("maybe", "unclear", ""),
        ("yes but", "unclear", ""),
        ("CD5678", "value", "CD5678"),
    ],
)
def test_a_confirmation_is_a_clear_yes_or_it_is_not_one(text, kind, given):
    reply = confirmation(text)
    assert (reply.kind, reply.value) == (kind, given)


def test_values_of_a_known_shape_are_found_inside_a_sentence_and_placed_by_it():
    kinds = {
        "staff_id": Kind("text", pattern=r"^[A-Z]{2}\d{4}$"),
        "email": Kind("email"),
        "ticket_reference": Kind("reference"),
        "phone": Kind("phone"),
        "accommodation": Kind("number"),
    }
    found = find_by_shape("sorry, the ticket ref was TR-88321", kinds, GB, asked="accommodation")
    assert [(f, r.value) for f, r in found] == [("ticket_reference", "TR-88321")]
    found = find_by_shape("sorry, I missed a dot, the email is lina.88@example.org", kinds, GB)
    assert [(f, r.value) for f, r in found] == [("email", "lina.88@example.org")]
    found = find_by_shape("AB1234, and my mobile is 07700 900555", kinds, GB)
    assert [(f, r.value) for f, r in found] == [("staff_id", "AB1234"), ("phone", "07700 900555")]
    assert find_by_shape("went to Leeds for the audit", kinds, GB) == []


@pytest.mark.parametrize(
    ("environ", "locale"),
    [
        ({"LANG": "en_GB.UTF-8"}, "en-GB"),
        ({"LANG": "en_US.UTF-8", "LC_ALL": "de_DE.UTF-8"}, "de-DE"),
        ({"FORMCTL_LOCALE": "en-US", "LANG": "en_GB.UTF-8"}, "en-US"),
        ({"LANG": "C.UTF-8"}, None),
        ({}, None),
    ],
)
def test_the_locale_comes_from_the_environment(environ, locale):
    assert locale_from_env(environ) == locale


def test_a_locale_is_normalised_or_refused():
    assert normalise_locale("en_gb") == "en-GB" and normalise_locale("fr") == "fr"
    assert normalise_locale("not a locale!") is None and normalise_locale("POSIX") is None
