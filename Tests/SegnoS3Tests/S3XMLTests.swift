import Foundation
@testable import SegnoS3
import Testing

@Suite struct S3XMLTests {
    @Test func parsesAnErrorDocumentWithEntities() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- c --><Error><Code>SignatureDoesNotMatch</Code><Message>a &lt;b&gt; &amp; &#233;&#x1F600;</Message>
            <RequestId>tx1</RequestId></Error>
            """
        let root = try #require(XMLElement.parse(Data(xml.utf8)))
        #expect(root.name == "Error")
        #expect(root.string("Code") == "SignatureDoesNotMatch")
        #expect(root.string("Message") == "a <b> & é😀")
    }

    @Test func parsesListPartsWithNamespacesAndSelfClosingElements() throws {
        let xml = """
            <ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>b</Bucket><Empty/>
            <IsTruncated>false</IsTruncated>
            <Part><PartNumber>1</PartNumber><ETag>&quot;abc&quot;</ETag><Size>5242880</Size></Part>
            <Part><PartNumber>2</PartNumber><ETag>"def"</ETag><Size>10</Size></Part>
            <s3:Extra a="x>y"><![CDATA[<raw>]]></s3:Extra></ListPartsResult>
            """
        let root = try #require(XMLElement.parse(Data(xml.utf8)))
        #expect(root.all("Part").map { $0.string("PartNumber") } == ["1", "2"])
        #expect(root.all("Part").map { S3Client.unquote($0.string("ETag") ?? "") } == ["abc", "def"])
        #expect(root.child("Empty") != nil)
        #expect(root.string("Extra") == "<raw>")
    }

    @Test func escapesText() {
        #expect(XMLElement.escape("a<b>&\"'") == "a&lt;b&gt;&amp;&quot;&apos;")
    }

    @Test func garbageIsNotADocument() {
        #expect(XMLElement.parse(Data("not xml".utf8)) == nil)
        #expect(XMLElement.parse(Data()) == nil)
    }

    @Test func datesFromListsAndHeaders() {
        #expect(S3Dates.parseISO8601("2013-05-24T00:00:00.500Z")?.timeIntervalSince1970 == 1_369_353_600.5)
        #expect(S3Dates.parseHTTP("Fri, 24 May 2013 00:00:00 GMT")?.timeIntervalSince1970 == 1_369_353_600)
        #expect(S3Dates.parseHTTP("yesterday") == nil)
    }
}
