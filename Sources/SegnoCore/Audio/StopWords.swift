import Foundation

/// Words left out when counting a transcript's words (topic boundaries, chapter titles): each
/// language's function words and the fillers of its speech, lower-case as `TopicTiling.words`
/// gives them. Hand-made lists of the commonest ones, not exhaustive: the inverse-frequency weights
/// and the title rule (a word in every chapter is no title) catch what they miss.
public enum StopWords {
    /// English function words and the fillers of speech.
    public static let english: Set<String> = Set("""
    a about above after again against all almost also although always am an and another any anybody anyone anything \
    are aren't around as at back be became because become been before being below between both but by can can't \
    cannot could couldn't did didn't do does doesn't doing don't done down during each either else enough even ever \
    every everything few first for from further get gets getting go goes going gone got had hadn't has hasn't have \
    haven't having he he'd he'll he's her here here's hers herself him himself his how how's however i i'd i'll i'm \
    i've if in into is isn't it it's its itself just know last let let's like made make many may me might mine more \
    most much must my myself need never new next no nobody none nor not nothing now of off often oh ok okay on once \
    one only or other others our ours ourselves out over own perhaps please put quite rather really right said same \
    say says see seem seems shall she she'd she'll she's should shouldn't since so some somebody someone something \
    still such take than that that's the their theirs them themselves then there there's these they they'd they'll \
    they're they've thing things think this those though through thus till to too two under until up upon us use used \
    uh um very want was wasn't way we we'd we'll we're we've well went were weren't what what's whatever when when's \
    where where's whether which while who who's whom whose why why's will with within without won't would wouldn't \
    yeah yes yet you you'd you'll you're you've your yours yourself yourselves
    """.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init))

    /// German function words and fillers.
    public static let german: Set<String> = Set("""
    aber alle allem allen aller alles als also am an andere anderen anderer anderes auch auf aus bei \
    beim bin bis bist da damit dann das dass dem den denn der des die dies diese diesem diesen dieser \
    dieses doch dort du durch eben ein eine einem einen einer eines er es etwas euch euer ganz gegen \
    geht gewesen gibt habe haben halt hat hatte hatten hier hin hinter ich ihm ihn ihnen ihr ihre ihrem \
    ihren ihrer im in indem ins ist ja jede jedem jeden jeder jedes jetzt kann kein keine keinem keinen \
    können könnte mal man manche mehr mein meine mich mir mit muss musste nach nicht nichts noch nun nur \
    ob oder ohne schon sehr sein seine seinem seinen seiner sich sie sind so solche soll sollte sondern \
    sonst um und uns unser unter viel vom von vor war waren warum was weil welche wenn wer werde werden \
    wie wieder will wir wird wo wurde würde zu zum zur zwar zwischen äh ähm über
    """.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init))

    /// French function words and fillers.
    public static let french: Set<String> = Set("""
    afin ai ainsi alors as au aussi autre aux avec avez avoir avons bien bon c'est ce ceci cela celle \
    celui ces cet cette ceux chez comme comment d'un d'une dans de des donc dont du elle elles en encore \
    est et eu euh fait faut fois il ils j'ai je l'on la le les leur leurs lui ma mais me mes moi mon \
    même n'est ne ni nos notre nous on ont ou où par parce pas peu peut plus pour qu qu'il qu'on quand \
    que quel quelle qui quoi sa sans se ses si son sont sous sur ta te tes toi ton tous tout toute \
    toutes très tu un une voilà vos votre vous y à ça était être
    """.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init))

    /// Spanish function words and fillers.
    public static let spanish: Set<String> = Set("""
    al algo algunos ante antes bueno como con contra cual cuando de del desde donde durante eh el ella \
    ellas ellos en entre era eres es esa esas ese eso esos esta estaba estamos estar este esto estos \
    están fue fueron ha hasta hay la las le les lo los me mi mis mucho muy más nada ni no nos nosotros \
    os otra otro para pero poco por porque pues que quien qué se sea ser si sin sobre son su sus sí \
    también tanto te tengo tiene todo todos tu tú un una uno unos usted vosotros ya yo él
    """.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init))

    /// Italian function words and fillers.
    public static let italian: Set<String> = Set("""
    ad agli ai al alla alle allo allora anche ancora avere beh c'è che chi ci cioè come con cosa da dal \
    dalla dei del della delle dello di dove ecco ed era essere fa gli ha hanno ho il in io la le lei li \
    lo loro lui ma mi mia mio ne nei nel nella no noi non nostro per perché più poi quale quando quello \
    questa questo se sei si sia siamo sono su sua sue sul sulla suo ti tra tu tutti tutto un una uno vi \
    voi è
    """.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init))

    /// Portuguese function words and fillers.
    public static let portuguese: Set<String> = Set("""
    ao aos as até com como da das de dela dele do dos ela ele eles em entre então era essa esse esta \
    este está eu foi há isso isto já lhe mais mas me mesmo meu minha muito na nas nem no nos não né nós \
    os ou para pela pelo por porque quando que quem se sem ser seu sua são também te tem ter tá um uma \
    você vocês é
    """.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init))

    /// Dutch function words and fillers.
    public static let dutch: Set<String> = Set("""
    aan al als bij dan dat de die dit doen door een en er had heb heeft hem het hij hoe hun ik in is ja \
    je kan kunnen maar me met mij mijn na naar niet niets nog nu of om omdat ons ook op over te tot uit \
    van veel voor was wat we wel werd wie wij wil worden zal ze zei zich zij zijn zo zou
    """.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init))

    /// The list for a transcript's language (ISO 639-1, any case; a region after "-" or "_" ignored):
    /// "en", "de", "fr", "es", "it", "pt", "nl". English for nil and for any other language, whose
    /// function words then reach titles only where they are not in every chapter.
    public static func of(_ language: String?) -> Set<String> {
        let code = language?.lowercased().split(whereSeparator: { $0 == "-" || $0 == "_" }).first.map(String.init) ?? "en"
        switch code {
        case "de": return german
        case "fr": return french
        case "es": return spanish
        case "it": return italian
        case "pt": return portuguese
        case "nl": return dutch
        default: return english
        }
    }
}
