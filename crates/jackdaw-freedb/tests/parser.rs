//! The parser against the 17 sample entries of `../shared/data/freedb/` (real, broken and edge
//! cases; FreeDB content is GPL, so they are read where they are, not copied into the project)
//! and against this crate's own `testdata/` entries (the cases the samples lack: Latin-1, CRLF,
//! UTF-8, linked disc ids, escapes, a five-digit year, dirty lines, skipped files).
//!
//! `FREEDB_SAMPLES` names another folder holding the samples.

use jackdaw_freedb::parse::{parse, Album, Encoding, ParseError, Warning};
use std::path::PathBuf;

fn samples() -> PathBuf {
    if let Some(p) = std::env::var_os("FREEDB_SAMPLES") {
        return PathBuf::from(p);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/freedb")
}

fn sample(rel: &str) -> Vec<u8> {
    let p = samples().join(rel);
    std::fs::read(&p).unwrap_or_else(|e| {
        panic!(
            "cannot read the FreeDB sample {} ({e}): the samples live in ../shared/data/freedb beside the repository; set FREEDB_SAMPLES to their folder",
            p.display()
        )
    })
}

fn own(name: &str) -> Vec<u8> {
    std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata").join(name)).unwrap()
}

/// What an entry must yield: the disc fields, the track count, some tracks (index, title,
/// seconds) and the warnings.
struct Expect<'a> {
    ids: &'a [&'a str],
    artist: &'a str,
    title: &'a str,
    year: Option<u16>,
    genre: &'a str,
    disc_seconds: Option<u32>,
    revision: u32,
    extd: &'a str,
    n: usize,
    tracks: &'a [(usize, &'a str, Option<u32>)],
    warnings: &'a [Warning],
}

fn check(bytes: &[u8], category: &str, e: Expect) -> Album {
    let p = parse(bytes, category).expect("parses");
    let a = p.album;
    assert_eq!(a.category, category);
    assert_eq!(a.discids, e.ids);
    assert_eq!(a.artist, e.artist);
    assert_eq!(a.title, e.title);
    assert_eq!(a.year, e.year);
    assert_eq!(a.genre, e.genre);
    assert_eq!(a.disc_seconds, e.disc_seconds);
    assert_eq!(a.revision, e.revision);
    assert_eq!(a.extd, e.extd);
    assert_eq!(a.tracks.len(), e.n, "track count");
    for &(i, title, secs) in e.tracks {
        assert_eq!(a.tracks[i].title, title, "track {i} title");
        assert_eq!(a.tracks[i].seconds, secs, "track {i} seconds");
    }
    assert_eq!(p.warnings, e.warnings);
    a
}

const NONE: &[Warning] = &[];

#[test]
fn real_12025d03_no_separator_artist_is_title() {
    let a = check(
        &sample("real/12025d03"),
        "country",
        Expect {
            ids: &["12025d03"],
            artist: "Ernest Ray Everett - Single CD",
            title: "Ernest Ray Everett - Single CD",
            year: Some(2009),
            genre: "Country",
            disc_seconds: Some(607),
            revision: 0,
            extd: "",
            n: 3,
            tracks: &[
                (0, "I'm Your Puppet", Some(159)),
                (1, "Me And Jacky", Some(260)),
                (2, "If You Don't Like Country", Some(184)),
            ],
            warnings: &[Warning::NoSeparator],
        },
    );
    assert_eq!(a.encoding, Encoding::Ascii);
}

#[test]
fn real_6f0c6509_header_with_trailing_space() {
    check(
        &sample("real/6f0c6509"),
        "classical",
        Expect {
            ids: &["6f0c6509"],
            artist: "Beethoven",
            title: "Beethoven Piano Sonatas",
            year: Some(1998),
            genre: "Classical",
            disc_seconds: Some(3175),
            revision: 2,
            extd: "",
            n: 9,
            tracks: &[
                (0, "Sonata No. 14 in C-sharp Minor, Op. 27, No. 2 Moonlight - I. Adagio sostenuto", Some(319)),
                (1, "II. Allegretto", Some(122)),
                (8, "III. Allegro ma non troppo; Presto", Some(415)),
            ],
            warnings: NONE,
        },
    );
}

#[test]
fn real_770bf909() {
    check(
        &sample("real/770bf909"),
        "rock",
        Expect {
            ids: &["770bf909"],
            artist: "Nightwish",
            title: "Angels Fall First",
            year: Some(1997),
            genre: "Metal",
            disc_seconds: Some(3067),
            revision: 2,
            extd: "",
            n: 9,
            tracks: &[(0, "Elvenpath", Some(274)), (8, "Lappi (Lapland)", Some(556))],
            warnings: NONE,
        },
    );
}

#[test]
fn real_840e160b_extd_year() {
    check(
        &sample("real/840e160b"),
        "rock",
        Expect {
            ids: &["840e160b"],
            artist: "Nightwish",
            title: "Once",
            year: Some(2004),
            genre: "Symphonic Metal",
            disc_seconds: Some(3608),
            revision: 3,
            extd: "YEAR: 2004",
            n: 11,
            tracks: &[(0, "Dark Chest Of Wonders", Some(268)), (10, "Higher Than Hope", Some(334))],
            warnings: NONE,
        },
    );
}

#[test]
fn real_8608460b_old_header() {
    check(
        &sample("real/8608460b"),
        "rock",
        Expect {
            ids: &["8608460b"],
            artist: "Van Halen",
            title: "Van Halen",
            year: Some(1978),
            genre: "Rock",
            disc_seconds: Some(2120),
            revision: 3,
            extd: "YEAR: 1978 ID3G: 17",
            n: 11,
            tracks: &[(0, "Runnin' With The Devil", Some(214)), (1, "Eruption", Some(102)), (10, "On Fire", Some(179))],
            warnings: NONE,
        },
    );
}

#[test]
fn real_9c0eac0c_empty_year() {
    check(
        &sample("real/9c0eac0c"),
        "classical",
        Expect {
            ids: &["9c0eac0c"],
            artist: "Mozart",
            title: "The Classics: Mozart",
            year: None,
            genre: "Classical",
            disc_seconds: Some(3758),
            revision: 4,
            extd: "ID3G:  32",
            n: 12,
            tracks: &[
                (0, "The Marriage of Figaro, Overture", Some(248)),
                (11, "Symphony No. 41 in C (Jupiter), 1st Movement", Some(279)),
            ],
            warnings: NONE,
        },
    );
}

#[test]
fn real_9e0e740c_track_with_slash() {
    check(
        &sample("real/9e0e740c"),
        "misc",
        Expect {
            ids: &["9e0e740c"],
            artist: "Madonna",
            title: "Ray of light",
            year: None,
            genre: "Pop",
            disc_seconds: Some(3702),
            revision: 1,
            extd: "",
            n: 12,
            tracks: &[(0, "Drowned world / substitue for love", Some(310)), (11, "Mer girl", Some(317))],
            warnings: NONE,
        },
    );
}

#[test]
fn real_b20cd40d_and_c00ccd0d_two_pressings() {
    let adele = |ids, disc_seconds, tracks| Expect {
        ids,
        artist: "Adele",
        title: "21",
        year: Some(2011),
        genre: "Pop",
        disc_seconds,
        revision: 0,
        extd: "",
        n: 13,
        tracks,
        warnings: NONE,
    };
    check(
        &sample("real/b20cd40d"),
        "misc",
        adele(&["b20cd40d"], Some(3286), &[(0, "Rolling in the deep", Some(208)), (12, "Hiding my heart", Some(188))]),
    );
    check(
        &sample("real/c00ccd0d"),
        "misc",
        adele(&["c00ccd0d"], Some(3279), &[(0, "Rolling In The Deep", Some(229)), (12, "Hiding My Heart", Some(205))]),
    );
}

#[test]
fn real_d1115d11_genre_other() {
    check(
        &sample("real/d1115d11"),
        "misc",
        Expect {
            ids: &["d1115d11"],
            artist: "Madonna",
            title: "The Immaculate Collection",
            year: Some(2005),
            genre: "other",
            disc_seconds: Some(4447),
            revision: 2,
            extd: "",
            n: 17,
            tracks: &[(0, "Lucky Star", Some(248)), (16, "Holiday", Some(331))],
            warnings: NONE,
        },
    );
}

#[test]
fn real_d50dd30f_various_sampler() {
    check(
        &sample("real/d50dd30f.record.txt"),
        "reggae",
        Expect {
            ids: &["d50dd30f"],
            artist: "Various",
            title: "Ska Island",
            year: Some(1997),
            genre: "Reggae",
            disc_seconds: Some(3541),
            revision: 3,
            extd: "YEAR: 1997",
            n: 15,
            tracks: &[
                (0, "King of Kings", Some(278)),
                (5, "Honky tonk Parts 1 & 2", Some(329)),
                (14, "Keep On Running", Some(217)),
            ],
            warnings: NONE,
        },
    );
}

#[test]
fn real_fd0b9912() {
    check(
        &sample("real/fd0b9912"),
        "blues",
        Expect {
            ids: &["fd0b9912"],
            artist: "Ray Charles",
            title: "Ray Charles Sings The Blues",
            year: Some(1995),
            genre: "Blues",
            disc_seconds: Some(2971),
            revision: 0,
            extd: "",
            n: 18,
            tracks: &[(0, "C.C. Rider (See-See Rider Blues)", Some(162)), (17, "Alone In The City Blues", Some(172))],
            warnings: NONE,
        },
    );
}

fn adele(disc_seconds: Option<u32>, tracks: &[(usize, &str, Option<u32>)], warnings: &[Warning], file: &str) {
    check(
        &sample(file),
        "misc",
        Expect {
            ids: &["c00ccd0d"],
            artist: "Adele",
            title: "21",
            year: Some(2011),
            genre: "Pop",
            disc_seconds,
            revision: 0,
            extd: "",
            n: 13,
            tracks,
            warnings,
        },
    );
}

#[test]
fn broken_disc_length_is_a_warning_and_the_last_track_has_no_length() {
    adele(
        None,
        &[(0, "Rolling In The Deep", Some(229)), (12, "Hiding My Heart", None)],
        &[Warning::BadDiscLength],
        "broken/corrupt_disc_length",
    );
}

#[test]
fn broken_offset_integer_loses_two_track_lengths_only() {
    adele(
        Some(3279),
        &[
            (0, "Rolling In The Deep", None),
            (1, "Rumour Has It", None),
            (2, "Turning Tables", Some(250)),
            (12, "Hiding My Heart", Some(205)),
        ],
        &[Warning::BadOffset],
        "broken/corrupt_offset_integer",
    );
}

#[test]
fn broken_last_offset_missing_counts_and_keeps_13_tracks() {
    adele(
        Some(3279),
        &[
            (0, "Rolling In The Deep", Some(229)),
            (11, "If It Hadn't Been For Love", Some(393)),
            (12, "Hiding My Heart", None),
        ],
        &[Warning::OffsetCount],
        "broken/corrupt_offset_last_line_missing",
    );
}

#[test]
fn broken_song_7_missing_leaves_an_empty_title() {
    adele(
        Some(3279),
        &[(6, "Take It All", Some(228)), (7, "", Some(241)), (8, "One And Only", Some(348))],
        &[Warning::MissingTrack],
        "broken/corrupt_song_7_missing",
    );
}

#[test]
fn edge_12345678_continuations_and_slashes() {
    let a = check(
        &sample("edge/12345678"),
        "misc",
        Expect {
            ids: &["12345678"],
            artist: "DiscArtist",
            title: "DiscTitle",
            year: Some(2003),
            genre: "Test data",
            disc_seconds: Some(160),
            revision: 1,
            extd: "",
            n: 16,
            tracks: &[
                (0, "TrackTitle1", Some(10)),
                (2, "TrackArtist3 cntd. / TrackTitle3", Some(10)),
                (3, "TrackArtist4 cntd. / TrackTitle4", Some(10)),
                (4, "TrackArtist5 / TrackTitle5", Some(10)),
                (5, "TrackArtist6 / TrackTitle6 cntd.", Some(10)),
                (7, "Track/Artist8 / TrackTitle8", Some(10)),
                (9, "Track /Artist10 / TrackTitle10", Some(10)),
                (13, "TrackTitle14", Some(10)),
                (15, "TrackTitle16 cntd.", Some(10)),
            ],
            // 0x78 = 120 tracks in the id, 16 in the entry.
            warnings: &[Warning::DiscIdTrackCount],
        },
    );
    assert_eq!(a.tracks[1].ext, "TrackExt2");
    assert_eq!(a.tracks[2].ext, "TrackExt3 cntd.");
    assert_eq!(a.tracks[3].ext, "TrackExt4 cntd.");
}

#[test]
fn edge_decafbad_title_continuation() {
    check(
        &sample("edge/decafbad"),
        "misc",
        Expect {
            ids: &["decafbad"],
            artist: "The Nameless Faceless Many",
            title: "dot dot E.P.",
            year: Some(2005),
            genre: "Math Rock",
            disc_seconds: Some(2000),
            revision: 0,
            extd: "",
            n: 3,
            tracks: &[
                (0, "Introduction", Some(1)),
                (1, "So Long That It Wraps Around", Some(797)),
                (2, "", Some(1200)),
            ],
            warnings: &[Warning::MissingTrack, Warning::DiscIdTrackCount],
        },
    );
}

#[test]
fn dbformat_text_is_not_an_entry() {
    assert_eq!(parse(&sample("DBFORMAT.txt"), "misc"), Err(ParseError::NotXmcd));
}

#[test]
fn latin1_entry_is_decoded_as_iso_8859_1() {
    let a = check(
        &own("latin1_7a025802"),
        "misc",
        Expect {
            ids: &["7a025802"],
            artist: "Björk Guðmundsdóttir",
            title: "Début à la fête",
            year: Some(1993),
            genre: "Pop",
            disc_seconds: Some(600),
            revision: 5,
            extd: "© 1993",
            n: 2,
            tracks: &[(0, "Human Behaviour", Some(264)), (1, "Crème brûlée", Some(333))],
            warnings: NONE,
        },
    );
    assert_eq!(a.encoding, Encoding::Latin1);
}

#[test]
fn crlf_utf8_linked_ids_escapes_long_year() {
    let a = check(
        &own("crlf_utf8_linked_470a6507"),
        "rock",
        Expect {
            ids: &["470a6507", "490a6407", "4d0a6c07"],
            artist: "Sigur Rós",
            title: "Ágætis byrjun",
            year: Some(9997),
            genre: "Post\nRock",
            disc_seconds: Some(400),
            revision: 0,
            extd: "Line one\nLine two",
            n: 2,
            tracks: &[(0, "Intro\twith tab", Some(198)), (1, "Back\\slash and a split\n escape", Some(200))],
            warnings: &[Warning::BadYear, Warning::DiscIdTrackCount],
        },
    );
    assert_eq!(a.encoding, Encoding::Utf8);
}

#[test]
fn dirty_entry_gives_warnings_not_an_error() {
    check(
        &own("dirty_mix"),
        "data",
        Expect {
            ids: &["0102030z"],
            artist: "",
            title: "",
            year: None,
            genre: "",
            disc_seconds: Some(50),
            revision: 0,
            extd: "",
            n: 3,
            tracks: &[(0, "One", Some(118)), (1, "", None), (2, "Three", None)],
            warnings: &[
                Warning::BadOffset,
                Warning::BadLine,
                Warning::BadLine,
                Warning::BadDiscId,
                Warning::NoTitle,
                Warning::BadYear,
                Warning::MissingTrack,
            ],
        },
    );
}

#[test]
fn skipped_entries_have_typed_errors() {
    assert_eq!(parse(&own("not_xmcd"), "misc"), Err(ParseError::NotXmcd));
    assert_eq!(parse(&own("no_discid"), "misc"), Err(ParseError::NoDiscId));
    assert_eq!(parse(b"", "misc"), Err(ParseError::NotXmcd));
    // Arbitrary bytes after the magic never panic.
    let mut junk = b"# xmcd\n".to_vec();
    junk.extend((0..=255u8).cycle().take(4000));
    let _ = parse(&junk, "misc");
}
