"""tools/data/movielens_join.py's optional columns (issue 14): --multi-task labels and the
--sequence history columns, on tiny hand-made tables (no ../shared needed).

The history rule: a row's hist_seq__item_id holds the same user's items rated strictly before the
row's timestamp (never the row itself, never a rating at the same second, never a later one), the
most recent last, at most --max-seq-len; hist_seq__genre is parallel to it.
"""
import csv
import subprocess
import sys

from train_job_helpers import MOVIELENS_COLUMNS, TOOLS, details

sys.path.insert(0, str(TOOLS / "data"))
import movielens_join  # noqa: E402

JOIN = TOOLS / "data" / "movielens_join.py"


def row(user, item, ts, genre="Drama"):
    return {"user_id": str(user), "item_id": str(item), "timestamp": str(ts), "genre": genre}


def test_history_is_strictly_earlier_same_user_most_recent_last():
    rows = [
        row(1, 10, 100, "Comedy"),
        row(2, 10, 50),           # another user: never in user 1's history
        row(1, 11, 200, "Action"),
        row(1, 12, 200, "War"),   # tie with item 11: neither sees the other
        row(1, 13, 150, "Drama"),  # out of order in the input: sorted by time
        row(1, 14, 300, "Crime"),
        row(2, 15, 40),
    ]
    hist = movielens_join.history_columns(rows, max_len=50)
    assert hist[0] == ("", "")                         # user 1's first rating
    assert hist[4] == ("10", "Comedy")                 # ts 150: only ts 100
    assert hist[2] == ("10;13", "Comedy;Drama")        # ts 200: not item 12 (same second)
    assert hist[3] == ("10;13", "Comedy;Drama")
    assert hist[5] == ("10;13;11;12", "Comedy;Drama;Action;War")  # ties by item id
    assert hist[6] == ("", "")                         # user 2 at ts 40: first
    assert hist[1] == ("15", "Drama")                  # user 2 at ts 50: only ts 40


def test_history_keeps_the_most_recent_max_len():
    rows = [row(7, 100 + t, 1000 + t) for t in range(6)]
    hist = movielens_join.history_columns(rows, max_len=3)
    assert [h[0] for h in hist] == ["", "100", "100;101", "100;101;102", "101;102;103",
                                    "102;103;104"]


def test_history_never_leaks_on_a_random_table():
    import random
    rng = random.Random(5)
    rows = [row(rng.randint(1, 4), rng.randint(1, 30), rng.randint(1, 40)) for _ in range(300)]
    hist = movielens_join.history_columns(rows, max_len=1000)
    for r, (items, _) in zip(rows, hist):
        want = sorted((int(o["timestamp"]), int(o["item_id"])) for o in rows
                      if o["user_id"] == r["user_id"] and int(o["timestamp"]) < int(r["timestamp"]))
        assert items == ";".join(str(i) for _, i in want)


def write_src(src):
    """A 3-user, 4-item RecBole atomic set in ml-100k's layout."""
    src.mkdir()
    (src / "ml-100k.inter").write_text(
        "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
        "1\t1\t5\t100\n1\t2\t4\t200\n1\t3\t2\t200\n1\t4\t3\t300\n2\t1\t1\t150\n2\t4\t5\t250\n"
        "3\t2\t4\t120\n3\t3\t5\t400\n1\t1\t3\t500\n2\t2\t4\t450\n")
    (src / "ml-100k.user").write_text(
        "user_id:token\tage:token\tgender:token\toccupation:token\tzip_code:token\n"
        "1\t24\tM\ttechnician\t85711\n2\t53\tF\tother\t94043\n3\t23\tM\twriter\t32067\n")
    (src / "ml-100k.item").write_text(
        "item_id:token\tmovie_title:token_seq\trelease_year:token\tclass:token_seq\n"
        "1\tToy Story\t1995\tAnimation Children's Comedy\n2\tGoldenEye\t1995\tAction Thriller\n"
        "3\tFour Rooms\t1995\tThriller\n4\tGet Shorty\t1995\tAction Comedy Drama\n")


def join(src, out, *flags):
    proc = subprocess.run([sys.executable, str(JOIN), "--src", str(src), "--out", str(out),
                           *flags], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, details(proc)
    train = list(csv.DictReader(open(out / "train.csv", encoding="utf-8")))
    evl = list(csv.DictReader(open(out / "eval.csv", encoding="utf-8")))
    header = next(csv.reader(open(out / "train.csv", encoding="utf-8")))
    return header, train + evl


def test_default_columns_unchanged_and_flags_append(tmp_path):
    src = tmp_path / "src"
    write_src(src)
    header, rows = join(src, tmp_path / "plain")
    assert header == MOVIELENS_COLUMNS
    header, rows = join(src, tmp_path / "mt", "--multi-task", "--sequence")
    assert header == MOVIELENS_COLUMNS + ["like", "love", "genre", "hist_seq__item_id",
                                          "hist_seq__genre"]
    assert len(rows) == 10
    for r in rows:
        rating = int(r["rating"])
        assert r["like"] == r["label"] == str(int(rating >= 4)), r
        assert r["love"] == str(int(rating == 5)), r
    by_key = {(r["user_id"], r["item_id"], r["timestamp"]): r for r in rows}
    last = by_key[("1", "1", "500")]  # user 1 re-rates item 1 last: every earlier rating
    assert last["hist_seq__item_id"] == "1;2;3;4", last
    assert last["hist_seq__genre"] == "Animation;Action;Thriller;Action", last
    assert last["genre"] == "Animation"
    assert by_key[("1", "3", "200")]["hist_seq__item_id"] == "1"  # not item 2 at the same second
    assert by_key[("2", "1", "150")]["hist_seq__item_id"] == ""


def test_bad_max_seq_len_is_refused(tmp_path):
    src = tmp_path / "src"
    write_src(src)
    proc = subprocess.run([sys.executable, str(JOIN), "--src", str(src), "--out",
                           str(tmp_path / "o"), "--sequence", "--max-seq-len", "0"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "--max-seq-len 0 must be >= 1" in proc.stderr, details(proc)
