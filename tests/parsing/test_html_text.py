import pytest

from llama_index_ragonite.parsing.html_text import parse_html, preclean, render


def text_of(html: str, inline: bool = False) -> str:
    return render(parse_html(html), inline=inline)


def test_cdata_code_body_is_kept_with_lines_and_placeholders():
    html = (
        '<ac:structured-macro ac:name="code"><ac:parameter ac:name="language">bash</ac:parameter>'
        '<ac:parameter ac:name="title">Fetch</ac:parameter>'
        "<ac:plain-text-body><![CDATA[wget -O /home/<your-user>/list.txt\ncat <<EOF >> .config\nA=1\nEOF]]>"
        "</ac:plain-text-body></ac:structured-macro>"
    )
    assert text_of(html) == "Fetch\nwget -O /home/<your-user>/list.txt\ncat <<EOF >> .config\nA=1\nEOF"


def test_placeholders_outside_cdata_stay_literal_text():
    html = "<p>Run <code>opkg install <PACKAGE></code> as <machine type> then reboot.</p><p>Next</p>"
    assert text_of(html) == "Run opkg install <PACKAGE> as <machine type> then reboot.\nNext"


def test_preclean_leaves_html_and_namespaced_tags_alone():
    html = '<p class="x">a</p><ac:link><ri:page ri:content-title="T"></ri:page></ac:link></ac:structured-macro><br/>'
    assert preclean(html) == html


def test_preclean_closes_xhtml_self_closed_elements_but_not_void_ones():
    html = '<ac:link><ri:page ri:content-title="T"/></ac:link><time datetime="2020-01-02" /><br/><img src="a.png"/>'
    assert preclean(html) == (
        '<ac:link><ri:page ri:content-title="T"></ri:page></ac:link>'
        '<time datetime="2020-01-02" ></time><br/><img src="a.png"/>'
    )


def test_parameters_are_configuration_except_titles_and_jira_keys():
    html = (
        '<p>Bug: <ac:structured-macro ac:name="jira"><ac:parameter ac:name="server">System JIRA</ac:parameter>'
        '<ac:parameter ac:name="serverId">87e67eec</ac:parameter><ac:parameter ac:name="key">OXT-1654</ac:parameter>'
        '</ac:structured-macro></p><ac:structured-macro ac:name="info"><ac:parameter ac:name="icon">true</ac:parameter>'
        '<ac:parameter ac:name="title">Heads up</ac:parameter><ac:rich-text-body><p>Back up first.</p>'
        "</ac:rich-text-body></ac:structured-macro>"
    )
    assert text_of(html) == "Bug: OXT-1654\nHeads up\nBack up first."


def test_status_expand_and_note_macros_keep_visible_text():
    html = (
        '<p>State: <ac:structured-macro ac:name="status"><ac:parameter ac:name="colour">Green</ac:parameter>'
        '<ac:parameter ac:name="title">DONE</ac:parameter></ac:structured-macro></p>'
        '<ac:structured-macro ac:name="expand"><ac:parameter ac:name="title">Details</ac:parameter>'
        "<ac:rich-text-body><p>Hidden text</p></ac:rich-text-body></ac:structured-macro>"
        '<ac:structured-macro ac:name="note"><ac:rich-text-body><p>Careful</p></ac:rich-text-body></ac:structured-macro>'
    )
    assert text_of(html) == "State: DONE\nDetails\nHidden text\nCareful"


def test_navigation_macros_and_emoticons_leave_no_noise():
    html = (
        '<p>A<ac:emoticon ac:name="tick"/> B</p><ac:structured-macro ac:name="toc"><ac:parameter ac:name="maxLevel">2'
        '</ac:parameter></ac:structured-macro><ac:structured-macro ac:name="children"><ac:parameter ac:name="all">true'
        "</ac:parameter></ac:structured-macro><p>C</p>"
    )
    assert text_of(html) == "A B\nC"


def test_links_show_label_or_target_and_users_read_as_handles():
    html = (
        '<p>See <ac:link><ri:page ri:content-title="Getting Started" ri:space-key="OD"/></ac:link>, '
        '<ac:link><ri:page ri:content-title="X"/><ac:plain-text-link-body><![CDATA[the guide]]>'
        '</ac:plain-text-link-body></ac:link> and <ac:link><ri:attachment ri:filename="log.txt"/></ac:link>.</p>'
        '<p>Ask <ac:link><ri:user ri:userkey="ff80808149733c610149804656d70002"/></ac:link>in 2016 or '
        '<ac:link><ri:user ri:username="jdoe"/></ac:link>.</p>'
    )
    assert text_of(html) == "See Getting Started , the guide and log.txt .\nAsk @user-d70002 in 2016 or @jdoe ."


def test_lists_render_with_markers_and_nesting_in_block_mode_and_inline_in_cells():
    html = '<ol start="3"><li>one<ul><li>sub</li></ul></li><li>two</li></ol>'
    assert text_of(html) == "3. one\n  - sub\n4. two"
    assert text_of(html, inline=True) == "one; sub; two"


def test_breaks_and_empty_time_elements():
    assert text_of("<p>a<br/>b<br>c</p>") == "a\nb\nc"
    assert text_of('<p>Date: <time datetime="2018-08-17"></time></p>') == "Date: 2018-08-17"


def test_adf_extension_uses_its_fallback_once():
    html = (
        '<ac:adf-extension><ac:adf-node type="decision-list"><ac:adf-attribute key="local-id">1</ac:adf-attribute>'
        "<ac:adf-content>Use Zoom</ac:adf-content></ac:adf-node><ac:adf-fallback><ul><li>Use Zoom</li></ul>"
        "</ac:adf-fallback></ac:adf-extension>"
    )
    assert text_of(html) == "- Use Zoom"


@pytest.mark.fault("lone surrogates in page text", "replaced ('?'), no UnicodeEncodeError")
def test_lone_surrogates_do_not_crash():
    assert text_of("<p>a\udcff b</p>") == "a? b"
